"""`make refit` (and `make test-slow`, which starts with it) reruns every notebook that writes a model the package ships
(`voicerag/models/`), in the Makefile's order (`FITS`): the list must name notebooks that exist, keep the order the
fits build on, and hold every notebook whose long measurements (`#| slow` cells) call one of the savers of those
models (the other cells define them, or test them on temporary files)."""
import json, re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the calls that write into voicerag/models: Answerability.save() with no path, and the savers of the other models
SAVERS = re.compile(r'\.save\(\)|\.save\((?:rerank_path|calibration_path|portable_calibration_path)\(|'
                    r'\bsave_(?:reading_threshold|heard|shift)\(')

def fits() -> list[str]:
    "The notebooks of the Makefile's `FITS`, in order, as paths under nbs/."
    text = ROOT.joinpath('Makefile').read_text(encoding='utf-8').replace('\\\n', ' ')
    line = next(line for line in text.splitlines() if line.startswith('FITS :='))
    return [f'{name}.ipynb' for name in line.split(':=', 1)[1].split()]

def slow_code_of(path:Path) -> str:
    "The code of the `#| slow` cells of the notebook at `path`."
    cells = json.loads(path.read_text(encoding='utf-8'))['cells']
    cells = [''.join(c['source']) for c in cells if c['cell_type'] == 'code']
    return '\n'.join(code for code in cells if code.lstrip().startswith('#| slow'))

def test_fits_exist_in_their_order():
    names = fits()
    for name in names: assert (ROOT/'nbs'/name).exists(), name
    at = {Path(name).stem.split('_')[0]: i for i, name in enumerate(names)}
    # the re-ranker, then the abstainers on its scores, then the answerability model, then what starts from it
    assert at['10'] < at['11'] < at['11a'] < at['13b'] < at['00b'] < at['08c']
    assert at['13b'] < at['08a'] and at['11'] < at['15b']

def test_every_notebook_writing_a_shipped_model_is_refitted():
    writing = {str(p.relative_to(ROOT/'nbs')) for p in (ROOT/'nbs').rglob('*.ipynb')
               if '.ipynb_checkpoints' not in p.parts and SAVERS.search(slow_code_of(p))}
    assert writing == set(fits())
