"""Task distributions: each samples Episodes from an explicit torch.Generator."""

from icgd.tasks.linear import LinearRegression

__all__ = ["LinearRegression"]
