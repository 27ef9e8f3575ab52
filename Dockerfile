# syntax=docker/dockerfile:1
#
# One image for every process: the api, the worker, the webhook dispatcher and the one-shot
# migration step; the command chooses (`node dist/api.js` by default, see docker-compose.yml).
#   build    — dev dependencies, the generated Prisma client, `npm run build` → dist/
#   runtime  — node:24 slim, production dependencies only, dist/ and prisma/ (migrations), ffmpeg,
#              non-root; node is the container's command, so SIGTERM reaches the service itself.
# scripts/pack-runtime.mjs lays out the runtime tree; the suite installs the same tree into an
# empty folder and runs every service from it (test/e2e/production-tree.test.ts).

ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS base
# No telemetry, update checks or funding/audit chatter during the build or at run time.
ENV CHECKPOINT_DISABLE=1 \
    PRISMA_HIDE_UPDATE_MESSAGE=1 \
    SCARF_ANALYTICS=false \
    DO_NOT_TRACK=1 \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    NPM_CONFIG_AUDIT=false
WORKDIR /app

# --- Only the package manifests, so the `npm ci` layers stay cached while sources change. ---
FROM base AS manifests
COPY . /src
RUN mkdir /manifests \
 && cd /src \
 && find . -name node_modules -prune -o -name package.json -print | xargs cp --parents -t /manifests \
 && cp package-lock.json /manifests/

# --- Build: all dependencies, the generated Prisma client, the bundles. ---
FROM base AS build
COPY --from=manifests /manifests/ ./
# The root postinstall (`node scripts/prisma-generate.mjs`) needs the schema, its generators and
# the Prisma config; it writes the client into packages/db/src/generated.
COPY prisma.config.ts ./
COPY prisma ./prisma
COPY scripts/prisma-generate.mjs ./scripts/
RUN --mount=type=cache,target=/root/.npm \
    npm ci --include=dev \
 && test -f packages/db/src/generated/prisma/client.ts
COPY . .
# The generated client is compiled into the bundles; the runtime tree needs no sources.
RUN npm run build \
 && node scripts/pack-runtime.mjs /runtime

# --- Production dependencies only (no install scripts: nothing here needs one). ---
FROM base AS prod-deps
COPY --from=manifests /manifests/ ./
COPY scripts/pack-runtime.mjs ./scripts/
RUN --mount=type=cache,target=/root/.npm \
    npm ci --omit=dev --omit=peer --ignore-scripts \
 && node scripts/pack-runtime.mjs --prune .

# --- Runtime image. ---
FROM base AS runtime
# The worker's video engine encodes MP4 with the system ffmpeg.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ffmpeg \
 && rm -rf /var/lib/apt/lists/*
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=build /runtime/ ./
# Uploaded and produced files; a named volume mounted here inherits this ownership.
RUN mkdir -p /data/files && chown node:node /data/files

ENV NODE_ENV=production \
    FILES_DIR=/data/files \
    PORT=3000 \
    OPS_PORT=9100
USER node
EXPOSE 3000 9100
# Alive = the API's /healthz on PORT, or the worker's/dispatcher's ops server on OPS_PORT
# (the API does not serve OPS_PORT; the others do not serve PORT). The slim image has no curl.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "const get=(p)=>fetch('http://127.0.0.1:'+p+'/healthz').then(r=>r.ok,()=>false);get(process.env.PORT).then(ok=>ok||get(process.env.OPS_PORT)).then(ok=>process.exit(ok?0:1))"]
CMD ["node", "--enable-source-maps", "dist/api.js"]
