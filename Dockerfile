# syntax=docker/dockerfile:1.7
# One image for every gateway service (the default target, `runtime`); the service is chosen at run time:
#   docker build -t gmg . && docker run -e SERVICE=worker-image gmg
#   (the migration Job / compose one-shot runs: node dist/scripts/migrate.js; the operator CLI:
#   docker compose exec api-edge node dist/scripts/admin.js help)
# The upstream simulator has its own target, the only one with ffmpeg: docker build --target sim -t gmg-sim .
# Services run as esbuild bundles (`npm run build`: dist/services/<name>/main.js, the workspace libs bundled in, npm
# packages from node_modules) under plain node with the flags in NODE_OPTIONS below (libs/config/src/runtime.ts:
# source maps, a 192 MiB heap budget); one node process per container receives SIGTERM directly. The one-shot scripts
# are bundled the same way (dist/scripts/migrate.js, dist/scripts/admin.js), so no image carries tsx or esbuild:
# they are development dependencies, installed only in the `deps-build` stage that compiles the bundles.

# The project's one Node: the major of .node-version (a maintained LTS line), as local runs, CI and the benchmarks
# use it (scripts/ensure-node.sh; test/infra/node-version.test.ts checks they agree).
ARG NODE_IMAGE=node:24-bookworm-slim

# --- manifests: only package.json files, so the dependency layer is rebuilt only when they change
FROM ${NODE_IMAGE} AS manifests
WORKDIR /src
COPY . .
RUN mkdir /out && cp package.json package-lock.json .npmrc /out/ \
 && cp --parents scripts/npm-install.sh /out/ \
 && find libs services packages -maxdepth 2 -name package.json -exec cp --parents {} /out/ \;

# --- deps: the locked install of the production dependencies of every workspace but the simulator, so the
# production image carries neither ffmpeg (the simulator's own dependency) nor a development tool. It does carry
# sharp: the art worker's image library (services/worker-artgen cuts a midjourney-proxy grid into its tiles).
# `npm pkg delete devDependencies` first (this stage's copy of package.json only; the lock is unchanged and npm ci
# installs a subset of it): with workspace filters npm ci follows the root's devDependencies too, and --omit=dev
# keeps what they reach that is not dev-only — the optional peers devDependencies satisfy (typescript, for valibot).
# Install scripts: only those listed in package.json "allowScripts" (.npmrc ignore-scripts=true;
# scripts/npm-install.sh).
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY --from=manifests /out/ ./
RUN ws=$(for f in libs/*/package.json services/*/package.json; do d=${f%/package.json}; \
           [ "$d" = services/upstream-sim ] || printf -- '-w %s ' "$d"; done) \
 && npm pkg delete devDependencies \
 && bash scripts/npm-install.sh --omit=dev --include-workspace-root $ws \
 && test ! -e node_modules/@ffmpeg-installer \
 && test -e node_modules/sharp \
 && test ! -e node_modules/tsx && test ! -e node_modules/esbuild && test ! -e node_modules/typescript \
 && npm cache clean --force

# --- deps-sim: every workspace's production dependencies, the simulator's ffmpeg and sharp included (without the
# root's devDependencies, as in `deps`)
FROM ${NODE_IMAGE} AS deps-sim
WORKDIR /app
COPY --from=manifests /out/ ./
RUN npm pkg delete devDependencies \
 && bash scripts/npm-install.sh --omit=dev \
 && test -e node_modules/sharp && test ! -e node_modules/tsx && test ! -e node_modules/typescript \
 && npm cache clean --force

# --- deps-build: the whole locked install, development dependencies included (esbuild), for the build stage alone;
# no image that runs copies it
FROM ${NODE_IMAGE} AS deps-build
WORKDIR /app
COPY --from=manifests /out/ ./
RUN bash scripts/npm-install.sh && npm cache clean --force

# --- app: the code and settings every image shares (no node_modules yet)
FROM ${NODE_IMAGE} AS app
# NODE_OPTIONS: the same flags as SERVICE_NODE_FLAGS in libs/config/src/runtime.ts (test/infra/build.e2e.test.ts
# checks); a Deployment that needs a larger heap sets its own.
ENV NODE_ENV=production \
    NODE_OPTIONS="--enable-source-maps --max-old-space-size=192 --max-semi-space-size=8" \
    SERVICE=api-edge
WORKDIR /app
COPY --chown=node:node package.json package-lock.json tsconfig.base.json tsconfig.json ./
COPY --chown=node:node libs ./libs
COPY --chown=node:node services ./services
COPY --chown=node:node infra ./infra
# Uploads (local-disk storage of api-edge): a volume is mounted here; with several replicas it must be shared.
ENV UPLOAD_DIR=/app/data/uploads
# Results kept by us on the local disk (api-edge serves them, the workers write them): a volume shared by both, or
# RESULT_STORE_URL=s3://bucket/prefix (docs/upstreams/results.md).
ENV RESULT_STORE_URL=/app/data/results
RUN mkdir -p /app/data/uploads /app/data/results && chown -R node:node /app/data
USER node
# api-edge and upstream-sim listen on PORT (8080 / 9090); queue consumers serve probes on HEALTH_PORT (9101-9105).
EXPOSE 8080 9090 9101 9102 9103 9104 9105
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD node -e "const p=process.env.HEALTH_PORT||process.env.PORT||8080;fetch('http://127.0.0.1:'+p+'/healthz',{signal:AbortSignal.timeout(2500)}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# exec replaces the shell with node, so the SIGTERM of `docker stop` / Kubernetes reaches the service itself.
CMD ["sh", "-c", "exec node dist/services/${SERVICE}/main.js"]

# --- build: the service and script bundles (scripts/build.mjs, esbuild), built from the same sources; scripts/ and
# the development dependencies stay in this stage, only dist/ leaves it
FROM app AS build
USER root
COPY --from=deps-build /app/node_modules ./node_modules
# .node-version: the bundles' target (scripts/build.mjs reads it); packages/console: the web console's sources, built
# into packages/console/dist (static files the edge serves at /console)
COPY scripts ./scripts
COPY .node-version ./
COPY packages/console ./packages/console
RUN node scripts/build.mjs

# --- sim: the upstream simulator (`docker build --target sim -t gmg-sim .`): the only image with ffmpeg
FROM app AS sim
ENV SERVICE=upstream-sim
COPY --from=deps-sim --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist

# --- runtime (the default target, `docker build -t gmg .`): every gateway service, the migration Job
# (node dist/scripts/migrate.js) and the operator CLI (node dist/scripts/admin.js)
FROM app AS runtime
COPY --from=deps --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
COPY --from=build --chown=node:node /app/packages/console/dist ./packages/console/dist
