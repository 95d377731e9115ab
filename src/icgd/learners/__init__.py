"""Learners: explicit algorithms and transformers, all answering `predict(episodes) -> (B, Q, Dy)`."""

from icgd.learners.base import Learner, describe
from icgd.learners.explicit import GD, GDPlusPlus, LeastSquares, Ridge, ZeroPredictor
from icgd.learners.recurrent import LSTMLearner
from icgd.learners.transformer import TransformerLearner, gd_transformer

__all__ = ["Learner", "describe", "GD", "GDPlusPlus", "LeastSquares", "Ridge", "ZeroPredictor",
           "TransformerLearner", "gd_transformer", "LSTMLearner"]
