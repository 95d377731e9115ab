"""Meta-training: validated configs, the batched-seed engine, run directories, checkpoints."""

from icgd.train.config import PRESETS, ConfigError, TrainConfig, load_config
from icgd.train.engine import TrainingDiverged, TrainingInterrupted, TrainResult, train

__all__ = ["PRESETS", "ConfigError", "TrainConfig", "load_config", "TrainingDiverged", "TrainingInterrupted",
           "TrainResult", "train"]
