# syntax=docker/dockerfile:1
#
# One image for every process: the api, the worker, the webhook dispatcher and the one-shot
# migration step. docker-compose.yml chooses the command per service (`npm run start:api`, ...).
# There is no build output: the services run their TypeScript directly with tsx.

FROM node:20-bookworm-slim AS base
# No telemetry, update checks or funding/audit chatter during the build or at run time.
ENV CHECKPOINT_DISABLE=1 \
    PRISMA_HIDE_UPDATE_MESSAGE=1 \
    SCARF_ANALYTICS=false \
    DO_NOT_TRACK=1 \
    NPM_CONFIG_UPDATE_NOTIFIER=false \
    NPM_CONFIG_FUND=false \
    NPM_CONFIG_AUDIT=false
WORKDIR /app

# --- Only the package manifests, so that `npm ci` below stays cached while sources change. ---
FROM base AS manifests
COPY . /src
RUN mkdir /manifests \
 && cd /src \
 && find . -name node_modules -prune -o -name package.json -print | xargs cp --parents -t /manifests \
 && cp package-lock.json /manifests/

# --- Dependencies and the generated Prisma client. ---
FROM base AS deps
COPY --from=manifests /manifests/ ./
# The root postinstall (`node scripts/prisma-generate.mjs`) needs the schema, its generators and
# the Prisma config; it writes the client into packages/db/src/generated.
COPY prisma.config.ts ./
COPY prisma ./prisma
COPY scripts/prisma-generate.mjs ./scripts/
# Dev dependencies are runtime dependencies here: tsx runs the services, prisma generates the client.
RUN --mount=type=cache,target=/root/.npm \
    npm ci --include=dev \
 && test -f packages/db/src/generated/prisma/client.ts

# --- Runtime image. ---
FROM base AS runtime
# The system ffmpeg encodes video (worker).
RUN apt-get update \
 && apt-get install -y --no-install-recommends ffmpeg \
 && rm -rf /var/lib/apt/lists/*
# node_modules (including workspace-level ones), the workspace links and the generated client.
COPY --from=deps /app ./
# Sources last (node_modules and packages/db/src/generated are excluded by .dockerignore).
COPY . .
# Uploaded and produced files; a named volume mounted here inherits this ownership.
RUN mkdir -p /data/files && chown node:node /data/files

ENV NODE_ENV=production \
    FILES_DIR=/data/files
USER node
EXPOSE 3000
CMD ["npm", "run", "start:api"]
