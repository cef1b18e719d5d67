# syntax=docker/dockerfile:1.7
# One image for every service; the service is chosen at run time:
#   docker run -e SERVICE=worker-image gmg
#   (the migration Job / compose one-shot runs: node --import tsx scripts/migrate.ts)
# Services run from TypeScript through tsx's in-process loader (tsx is a runtime dependency), so there is no build
# step and one node process per container receives SIGTERM directly.

ARG NODE_IMAGE=node:20-bookworm-slim

# --- manifests: only package.json files, so the dependency layer is rebuilt only when they change
FROM ${NODE_IMAGE} AS manifests
WORKDIR /src
COPY . .
RUN mkdir /out && cp package.json package-lock.json /out/ \
 && cp --parents scripts/npm-install.sh /out/ \
 && find libs services packages -maxdepth 2 -name package.json -exec cp --parents {} /out/ \;

# --- deps: the locked install, then dev dependencies pruned away
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY --from=manifests /out/ ./
# scripts/npm-install.sh = npm ci (with a fallback for registries that lack other platforms' optional binaries).
RUN bash scripts/npm-install.sh \
 && npm prune --omit=dev --no-audit --no-fund \
 && npm cache clean --force

# --- runtime
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    NODE_OPTIONS=--enable-source-maps \
    SERVICE=api-edge
WORKDIR /app
COPY --from=deps --chown=node:node /app/node_modules ./node_modules
COPY --chown=node:node package.json package-lock.json tsconfig.base.json tsconfig.json ./
COPY --chown=node:node libs ./libs
COPY --chown=node:node services ./services
# scripts/: migrate.ts (migration Job) and admin.ts (`docker compose exec api-edge node --import tsx scripts/admin.ts`).
COPY --chown=node:node scripts ./scripts
COPY --chown=node:node infra ./infra
# Uploads (local-disk storage of api-edge): a volume is mounted here; with several replicas it must be shared.
ENV UPLOAD_DIR=/app/data/uploads
RUN mkdir -p /app/data/uploads && chown -R node:node /app/data
USER node
# api-edge and upstream-sim listen on PORT (8080 / 9090); queue consumers serve probes on HEALTH_PORT (9101-9105).
EXPOSE 8080 9090 9101 9102 9103 9104 9105
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD node -e "const p=process.env.HEALTH_PORT||process.env.PORT||8080;fetch('http://127.0.0.1:'+p+'/healthz',{signal:AbortSignal.timeout(2500)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# exec replaces the shell with node, so the SIGTERM of `docker stop` / Kubernetes reaches the service itself.
CMD ["sh", "-c", "exec node --import tsx services/${SERVICE}/src/main.ts"]
