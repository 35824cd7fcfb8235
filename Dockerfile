# syntax=docker/dockerfile:1
# Corvid in a container: `corvid run` as an unprivileged user, CORVID_HOME=/data, with the
# workspace, the machine-managed state and the downloaded embedding model on volumes and
# config.yaml mounted in.
# Build and run: docs/operations/docker.md.

# Build the wheel apart, so the image holds neither the sources nor the build tools.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY gateway ./gateway
COPY channels ./channels
COPY agent ./agent
COPY workspace_template ./workspace_template
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    CORVID_HOME=/data
# tzdata (from PyPI): the whole IANA time-zone database for zoneinfo; the slim image's own copy
# is partial or missing, depending on the Debian release under it.
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-cache-dir /wheels/*.whl tzdata
# bubblewrap: the box the exec tool runs commands in (tools.exec, off by default). Inside a
# container it needs user namespaces (Docker's default seccomp profile may refuse them); when it
# cannot run, the tool is not offered and `corvid doctor` says why.
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap \
 && rm -rf /var/lib/apt/lists/*
# A fixed uid, so a folder bind-mounted from the host can be given to it (chown 10001).
RUN groupadd --system --gid 10001 corvid \
 && useradd --system --uid 10001 --gid corvid --home-dir /data --no-create-home \
        --shell /usr/sbin/nologin corvid \
 && mkdir -p /data/workspace /data/state /data/models \
 && chown -R corvid:corvid /data \
 && chmod 700 /data/state
# Declared after the chown: a new named volume starts as a copy of this, owned by corvid.
# models/ holds the embedding model memory search fetches once: on a volume, a new image does
# not fetch it again. config.yaml is not a volume: mount your own at /data/config.yaml
# (read-only is fine).
VOLUME ["/data/workspace", "/data/state", "/data/models"]
USER corvid
WORKDIR /data

# Healthy = the gateway's event loop answers on state/control.sock. Not the full
# `corvid doctor`: that would call the Anthropic and chat APIs every minute, and an outage
# there would mark the container unhealthy though a restart cannot help. The socket opens
# once every channel has connected, hence the start period.
HEALTHCHECK --interval=60s --timeout=10s --start-period=90s --retries=3 \
    CMD ["corvid", "doctor", "--alive", "--timeout", "5"]

# corvid handles SIGTERM itself (turns in flight get gateway.shutdown_grace, 20 s): stop the
# container with a longer timeout than Docker's 10 s, e.g. `docker stop -t 30`.
STOPSIGNAL SIGTERM
CMD ["corvid", "run"]
