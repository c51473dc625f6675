"""The README's Use section, run as a newcomer would copy it: every Python block in a fresh interpreter from the
checkout, and each `print(...)  # expected` comment checked against what that print wrote (a trailing `...` marks a
prefix), and the same for the Python blocks of the docs page that continues it (nbs/usage.md); and the example of
indexing one's own documents, built from the folder it names into a temporary data home and asked its question, whose
`# answer: ANSWER (FILE)` comment is checked against the answer and the citation."""
import os, re, shlex, subprocess, sys, tempfile
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

def use_section(readme:str) -> str:
    "The README's `## Use` section, up to the next `## ` heading."
    found = re.search(r'^## Use\n(.*?)(?=^## |\Z)', readme, re.M | re.S)
    assert found, 'README.md has no "## Use" section'
    return found.group(1)

def python_blocks(section:str) -> list[str]:
    "The fenced ```python blocks of `section`, in order."
    return re.findall(r'^```python\n(.*?)^```', section, re.M | re.S)

def expected_prints(block:str) -> list[str]:
    "What each commented print line promises: the comment after `print(...)`, without a trailing `...`."
    return [m.group(1).removesuffix('...').strip() for m in re.finditer(r'^print\(.*\)\s+#\s*(.+)$', block, re.M)]

USE = use_section((ROOT/'README.md').read_text(encoding='utf-8'))
USAGE_PAGE = ROOT/'nbs'/'usage.md'                 # the docs page with the rest of the README's examples
README_BLOCKS = python_blocks(USE)
PAGE_BLOCKS = [b for b in python_blocks(USAGE_PAGE.read_text(encoding='utf-8')) if b not in README_BLOCKS]
BLOCKS = README_BLOCKS + PAGE_BLOCKS
BLOCK_IDS = [f'readme{i}' for i in range(len(README_BLOCKS))] + [f'usage{i}' for i in range(len(PAGE_BLOCKS))]

def corpus_example(section:str) -> tuple[str, str]:
    "The `voicerag-build --corpus` line of `section`'s shell example of one's own documents, and its `voicerag-ask`."
    blocks = re.findall(r'^```sh\n(.*?)^```', section, re.M | re.S)
    block = next((b for b in blocks if 'voicerag-build --corpus' in b), '')
    lines = block.splitlines()
    build, ask = (next((l for l in lines if l.startswith(prefix)), None)
                  for prefix in ('voicerag-build --corpus', 'voicerag-ask'))
    assert build and ask, f'the Use section has no shell example of voicerag-build --corpus and voicerag-ask:\n{block}'
    return build, ask

def test_the_use_section_has_the_promised_snippets():
    assert README_BLOCKS and 'load_pipeline' in README_BLOCKS[0] and expected_prints(README_BLOCKS[0]), README_BLOCKS
    assert any('read_answer' in b and expected_prints(b) for b in PAGE_BLOCKS), f'{USAGE_PAGE} lost its reading example'
    promised = expected_prints("print(r.x)       # answered 308 | The Panthers ...\nx = 1  # not a print")
    assert promised == ['answered 308 | The Panthers']

@pytest.mark.parametrize('block', BLOCKS, ids=BLOCK_IDS)
def test_readme_python_block_runs_as_written(block):
    run = subprocess.run([sys.executable, '-c', block], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    printed = run.stdout.splitlines()
    for promise in expected_prints(block):
        assert any(line.startswith(promise) for line in printed), (promise, run.stdout[-2000:])

def run_line(line:str, home:str) -> subprocess.CompletedProcess:
    "A README shell line (its comment dropped), run from the checkout with this environment's scripts and data home."
    args = shlex.split(line, comments=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith('VOICERAG_')} | {'VOICERAG_HOME': home}
    return subprocess.run([BIN/args[0], *args[1:]], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)

def test_readme_corpus_example_builds_and_answers():
    build, ask = corpus_example(USE)
    promise = re.search(r'#\s*answer:\s*(.+?)\s+\((\S+)\)\s*$', ask)
    assert promise, f'the voicerag-ask line says no "# answer: ANSWER (FILE)": {ask}'
    answer, cited = promise.groups()
    with tempfile.TemporaryDirectory() as home:
        built = run_line(build, home)
        assert built.returncode == 0, built.stderr[-3000:]
        into = f"built {Path(home)/'indexes'}{os.sep}"                                      # the temporary data home
        assert built.stdout.startswith(into), built.stdout
        asked = run_line(ask, home)
        assert asked.returncode == 0, asked.stderr[-3000:]
        assert re.search(rf'^answer\s+{re.escape(answer)}$', asked.stdout, re.M), (answer, asked.stdout)
        assert re.search(rf'^citation\s+{re.escape(cited)} ', asked.stdout, re.M), (cited, asked.stdout)

def test_corpus_example_is_found():
    section = '```sh\nvoicerag-build --corpus d/ --name x\nvoicerag-ask --name x "Q?"  # answer: A (f.txt)\n```\n'
    build, ask = corpus_example(section)
    assert build == 'voicerag-build --corpus d/ --name x'
    assert shlex.split(ask, comments=True) == ['voicerag-ask', '--name', 'x', 'Q?']
    with pytest.raises(AssertionError, match='no shell example'): corpus_example('```sh\nvoicerag-ask "Q?"\n```\n')
