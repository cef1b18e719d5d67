// Swagger UI over the gateway's own generated document. Everything is served by the edge: no CDN, no online
// validator (validatorUrl: null), so the page works offline.
window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
  layout: 'BaseLayout',
  defaultModelsExpandDepth: 1,
  docExpansion: 'list',
});
