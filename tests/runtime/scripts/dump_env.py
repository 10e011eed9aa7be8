"""Write this rank's environment to $DUMP_DIR/rank<RANK>.json (the launcher comparison)."""

import json
import os
from pathlib import Path

Path(os.environ["DUMP_DIR"], f"rank{os.environ['RANK']}.json").write_text(
    json.dumps(dict(os.environ))
)
