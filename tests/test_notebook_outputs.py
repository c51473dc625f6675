"Saved notebook outputs stay readable: no progress bars or orphaned widget views, nothing huge."
import json
from pathlib import Path
import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1]/'nbs').rglob('*.ipynb'))
MAX_OUTPUT_BYTES = 200_000          # a few tables and a plot; raw arrays or logs would exceed it

def _outputs(path):
    return [o for c in nbformat.read(path, 4).cells if c.cell_type == 'code' for o in c.get('outputs', [])]

@pytest.mark.parametrize('path', NOTEBOOKS, ids=lambda p: p.name)
def test_outputs_are_small_and_clean(path):
    outputs = _outputs(path)
    assert not [o for o in outputs if 'application/vnd.jupyter.widget-view+json' in o.get('data', {})], \
        f'{path.name} saves widget views that cannot render without their state (progress bars?)'
    assert not [o for o in outputs if o.get('output_type') == 'stream' and '%|' in o.get('text', '')], \
        f'{path.name} saves progress-bar text'
    size = sum(len(json.dumps(o)) for o in outputs)
    assert size < MAX_OUTPUT_BYTES, f'{path.name} saves {size:,} bytes of outputs'
    assert not [o for o in outputs if o.get('output_type') == 'error'], f'{path.name} saved an error output'
