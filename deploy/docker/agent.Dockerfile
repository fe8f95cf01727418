# syntax=docker/dockerfile:1
# The agent's image: one user's agent, run by the Kubernetes provisioner as a StatefulSet of 0 or
# 1 replicas (KUBE_AGENT_IMAGE). The Pod sets HOST, AGENT_PORT, AGENT_SECRET (or its SHA-256),
# the egress gateway's address and token, AGENT_WORKSPACE and AGENT_STATE_DIR on its volume.
#
#   docker build -f deploy/docker/agent.Dockerfile -t agent-accounts/agent:latest .
#
# Kept simple on purpose, and NOT BUILT by this repository's tests or CI: the machines it is
# developed on have no usable container runtime. Build it once on a machine with Docker or
# BuildKit before relying on it.
#
# No bubblewrap. A local agent's `exec` commands run in a nested bwrap sandbox
# (AGENT_EXEC_SANDBOX, set by the local provisioner); inside a Pod that needs unprivileged user
# namespaces, which the Pod's seccomp profile (RuntimeDefault) and dropped capabilities refuse.
# In a Pod AGENT_EXEC_SANDBOX stays unset: `exec` commands run as the agent's own user, in the
# Pod, whose runtime (gVisor or Kata: KUBE_RUNTIME_CLASS), non-root uid, read-only root file
# system and NetworkPolicy are the sandbox. docs/deployment.md (Kubernetes) says what that
# changes.

# --- build: every dependency, then the compiled server tree (no web client) ------------------
# The build runs the agent bundle once to make its V8 code cache (dist/agent/agent.code-cache):
# it fits the Node of this same base image, which the runtime stage uses too.
FROM node:20-bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . .
RUN npm ci --no-audit --no-fund \
 && npx tsx scripts/build.ts --server \
 && npm prune --omit=dev --no-audit --no-fund \
 && npm cache clean --force \
 && rm -rf test e2e bench docs client

# --- runtime ---------------------------------------------------------------------------------
FROM node:20-bookworm-slim
# What `exec` commands find besides the shell: kept small; add what your users' commands need.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates git python3 \
 && rm -rf /var/lib/apt/lists/*
# Defaults the provisioner's Pod spec overrides: listen on the Pod's address, port 8080 (the
# NetworkPolicy's), workspace and agent.db on the PersistentVolumeClaim mounted at /data.
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    AGENT_PORT=8080 \
    AGENT_WORKSPACE=/data/workspace \
    AGENT_STATE_DIR=/data/state
RUN groupadd --gid 10001 agent \
 && useradd --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin agent \
 && mkdir -p /data \
 && chown 10001:10001 /data
WORKDIR /app
COPY --from=build --chown=0:0 /app /app
USER 10001:10001
EXPOSE 8080
STOPSIGNAL SIGTERM
# The agent bundle, compiled from its code cache (server/agent/boot.ts). No NODE_OPTIONS: V8
# refuses a code cache made under other flags.
CMD ["node", "dist/agent/boot.cjs"]
