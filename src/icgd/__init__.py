"""icgd: in-context learning as gradient descent.

Core pipeline: a task distribution samples `Episodes`; a learner (explicit algorithm or transformer)
predicts the queries; `icgd.metrics` scores predictions and compares learners.
"""

from icgd.episodes import Episodes, ShapeError, TaskDistribution, make_generator

__version__ = "0.1.0"
__all__ = ["Episodes", "ShapeError", "TaskDistribution", "make_generator", "__version__"]
