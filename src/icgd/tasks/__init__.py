"""Task distributions: each samples Episodes from an explicit torch.Generator."""

from icgd.tasks.linear import LinearRegression
from icgd.tasks.sine import SineRegression

__all__ = ["LinearRegression", "SineRegression"]
