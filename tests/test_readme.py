"""The README's Use section, run as a newcomer would copy it: every Python block in a fresh interpreter from the
checkout, and each `print(...)  # expected` comment checked against what that print wrote (a trailing `...` marks a prefix)."""
import re, subprocess, sys
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]

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

BLOCKS = python_blocks(use_section((ROOT/'README.md').read_text(encoding='utf-8')))

def test_the_use_section_has_the_promised_snippets():
    assert len(BLOCKS) >= 2 and 'load_pipeline' in BLOCKS[0] and expected_prints(BLOCKS[0]), BLOCKS
    assert expected_prints("print(r.x)       # answered 308 | The Panthers ...\nx = 1  # not a print") == ['answered 308 | The Panthers']

@pytest.mark.parametrize('block', BLOCKS, ids=[f'block{i}' for i in range(len(BLOCKS))])
def test_readme_python_block_runs_as_written(block):
    run = subprocess.run([sys.executable, '-c', block], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    printed = run.stdout.splitlines()
    for promise in expected_prints(block):
        assert any(line.startswith(promise) for line in printed), (promise, run.stdout[-2000:])
