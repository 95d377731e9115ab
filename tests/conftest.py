import os

import torch
from hypothesis import settings

settings.register_profile("icgd", max_examples=40, deadline=None)
settings.load_profile("icgd")

torch.set_num_threads(min(2, torch.get_num_threads()))
if os.environ.get("PYTEST_XDIST_WORKER"):  # two workers on the two cores (pyproject.toml): one thread each
    torch.set_num_threads(1)
