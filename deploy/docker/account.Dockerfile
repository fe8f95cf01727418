# syntax=docker/dockerfile:1
# The account service's image: the API, the web client, the agents' egress gateway and the
# Kubernetes provisioner (deploy/kubernetes/account.yaml runs it).
#
#   docker build -f deploy/docker/account.Dockerfile -t agent-accounts/account:latest .
#
# Kept simple on purpose, and NOT BUILT by this repository's tests or CI: the machines it is
# developed on have no usable container runtime. It follows `npm ci && npm run build` as
# docs/deployment.md describes it; build it once on a machine with Docker or BuildKit before
# relying on it.

# --- build: every dependency, the compiled server tree (dist/) and the web client ---------------
FROM node:20-bookworm-slim AS build
# better-sqlite3 downloads a prebuilt binary for linux/glibc; the toolchain is the fallback
# when none fits the platform.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# The whole context (.dockerignore trims it): `npm ci`'s postinstall generates the Prisma
# clients from prisma/ and scripts/.
COPY . .
RUN npm ci --no-audit --no-fund \
 && npm run build \
 && npm prune --omit=dev --no-audit --no-fund \
 && npm cache clean --force \
 && rm -rf test e2e bench docs

# --- runtime ---------------------------------------------------------------------------------
FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/var/lib/agent-accounts
# uid/gid 10001, numeric in USER so that `runAsNonRoot` can check it. DATA_DIR exists and is
# the user's (the Deployment mounts an emptyDir there; the root file system stays read-only).
RUN groupadd --gid 10001 app \
 && useradd --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin app \
 && mkdir -p /var/lib/agent-accounts \
 && chown 10001:10001 /var/lib/agent-accounts
WORKDIR /app
# The tree as built: dist/ (with its links dist/prisma → prisma and dist/client → client, which
# holds the built web client in client/web/dist), the production node_modules, package.json
# ("type": "module"), prisma/ (migrations) and rest-bridge/ (the API docs' browser script).
COPY --from=build --chown=0:0 /app /app
USER 10001:10001
EXPOSE 3000 8081
STOPSIGNAL SIGTERM
CMD ["node", "dist/server/account/main.js"]
