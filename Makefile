# Every target sets up what it needs; on a fresh machine with Python 3.11, `make demo`
# and `make test` are the only two commands anyone has to know.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: venv install sysdeps export clean-nbs lint test test-nbs test-py test-slow refit test-container demo demo-text serve eval train lab readme docs

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# torch first, pinned: the CPU build of 2.13.0 is a local wheel; unpinned, a dependency would pull GBs of CUDA.
# The scale extra (Ray) too, so that the Ray build's test runs in `make test` as everywhere else.
$(STAMP): $(BIN)/python setup.py settings.ini
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e ".[dev,scale]"
	touch $(STAMP)

venv: $(BIN)/python
install: $(STAMP)

# Debian packages the tests need: chromium (browser test), espeak-ng, sox and Festival's Hindi voice (test speech).
# Installed only when missing; apt-get needs root (CI runs as root) or sudo.
SYSDEPS := chromium espeak-ng sox
HINDI_VOICE := /usr/share/festival/voices/hindi/hindi_NSK_diphone
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
sysdeps:
	@missing=$$(for c in $(SYSDEPS); do command -v $$c >/dev/null || echo $$c; done; \
	            [ -d $(HINDI_VOICE) ] && [ -f /usr/share/festival/hindi_scm/hindi_lex.scm ] || echo festvox-hi-nsk); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:" $$missing; \
	  $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(SYSDEPS) libsox-fmt-all fonts-noto-core \
	    festival festvox-hi-nsk festival-hi >/dev/null; \
	fi

export: install
	$(BIN)/nbdev_export

clean-nbs: install
	$(BIN)/nbdev_clean

test-nbs: install sysdeps
	$(BIN)/nbdev_test --n_workers 2 --timing

test-py: install sysdeps
	$(BIN)/python -m pytest -q --durations=15 tests

# the formatting gate (ruff.toml): code lines over 120 characters, syntax errors and undefined names, in the notebooks
# (their code cells) and the tests; the exported package is generated from the notebooks and not read
lint: install
	$(BIN)/ruff check --quiet .

test: lint test-nbs test-py

# Every notebook that writes a model the package ships (voicerag/models/), in the order each starts from the ones
# before: the re-ranker (10) before the abstainers fitted on its scores (11, and 11a for other corpora), the reading
# mode's threshold (13d), the answerability model with the English and Hindi thresholds (13b, which starts anew), the
# other languages' thresholds (00b), those for answers cited across languages (08c, whose fallback is the strictest of
# 00b's) and for Hindi read from Latin letters (08a), and spoken Hindi's (15b, on the abstainer of 11). Run in path
# order, 13b would come after 00b and 08a and wipe what they had fitted into answerability.json.
space := $(eval) $(eval)
FITS := experiments/10_rerank_measured experiments/11_declining_measured experiments/11a_portable_measured \
        experiments/13d_reading_measured experiments/13b_answerability_measured experiments/00b_languages_measured \
        retrieval/08c_question_shift experiments/08a_romanized_measured experiments/15b_spoken_hindi
refit: install sysdeps
	for nb in $(FITS); do $(BIN)/nbdev_test --flags slow --timing --path nbs/$$nb.ipynb || exit 1; done

test-slow: refit
	$(BIN)/nbdev_test --n_workers 1 --flags slow --timing \
	  --skip_file_re '^([_.]|$(subst $(space),|,$(notdir $(FITS))))'

# the Dockerfile built and run for real by buildah (apt-get install buildah podman debootstrap) on a Debian base made
# here, no registry needed: /v1/health, an answered /v1/ask with the token, a 401 without it (tests/container/).
# Not in `make test`: the first build takes about 15 minutes on 2 cores; a rerun rebuilds from the first changed layer.
test-container:
	tests/container/make_base.sh
	tests/container/test_container.sh

# builds what is missing (index, Whisper files), then serves the voice app with Voila on 127.0.0.1 and prints the URL
demo: install
	$(BIN)/voicerag-demo

# ask questions in the terminal, no browser (voicerag-demo --text)
demo-text: install
	$(BIN)/voicerag-demo --text

# the HTTP API (voicerag.serving.api) on 127.0.0.1:8000 over the default index, built first when missing; Ctrl-C stops it.
# Beyond loopback only with a token: VOICERAG_API_TOKEN=... make serve HOST=0.0.0.0
HOST ?= 127.0.0.1
PORT ?= 8000
serve: install
	$(BIN)/voicerag-build --if-missing
	$(BIN)/voicerag-serve --host $(HOST) --port $(PORT)

# every number of the README: writes nbs/eval_results.json (three to seven minutes on 2 cores once the indexes exist)
eval: install
	$(BIN)/voicerag-eval

# trains the passage reader (nbs/fitting/13e_training) on the train split into voicerag/models/reading.npz: 70 minutes on 2 cores with AMX,
# with a checkpoint every 5 minutes in .train/; rerun after a kill and it resumes. SHARE=0.25 trains on a quarter (learning curve).
SHARE ?= 1
train: install
	$(BIN)/voicerag-train --share $(SHARE) $(if $(filter-out 1,$(SHARE)),--out .train/reading-share$(SHARE).npz)

# JupyterLab on 127.0.0.1 in nbs/, to read and rerun the notebooks: no browser is opened; open the URL it prints
# (it carries the access token). Ctrl-C stops it. Jupyter refuses to run as root unless told (containers, CI).
ALLOW_ROOT := $(shell [ "$$(id -u)" = 0 ] && echo --allow-root)
lab: install
	$(BIN)/jupyter lab --no-browser --ip=127.0.0.1 --ServerApp.root_dir=nbs $(ALLOW_ROOT)

# README.md is rendered from nbs/index.ipynb (nbdev_readme needs Quarto, which is not available here)
readme: install
	$(BIN)/jupyter nbconvert --to markdown --no-input nbs/index.ipynb --output-dir . --output README --log-level WARN

# the docs site in _docs/ (open _docs/index.html): Sphinx with myst-nb renders nbs/ (index.ipynb is the home page, the
# guide's pages are nbs/*.md and nbs/results.ipynb, every notebook is a page) from the saved outputs, executing nothing and
# loading nothing from another host; configured in nbs/_docs_src/conf.py. A warning (a broken link, say) fails the build.
DOCS ?= _docs
docs: install
	$(BIN)/sphinx-build -q -W --keep-going -b html -c nbs/_docs_src nbs $(DOCS)
	@echo "docs: $(DOCS)/index.html"
