// esbuild bundles imported stylesheets into the hashed CSS file (build.mjs); they export nothing.
declare module '*.css';
