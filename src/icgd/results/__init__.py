"""How results are held and drawn, below the studies that make them: tidy pandas frames of claims, results
and training metrics (`tables`), the figure style (`figures`) and the claims table as text or drawn by rich
(`console`)."""
