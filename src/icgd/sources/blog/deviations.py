"""What every experiment of source 001 does differently from the post, each with its reason."""

BLOG_DEVIATIONS = (
    "the post's code is not public: its LSAs train with source 000's code's set-up (`authors_setup`: AdamW "
    "b2 0.98, lr 1e-3, batch 2048, clip 0.001 up to 2 layers); the post states Adam, batch 2048 and lr 1e-4 "
    "(its draft only). Reason: the set-up of the study it replicates.",
    "Dx = N = 10 throughout; the post's learning-curve and scaling figures are at D = 5 (their zero level "
    "0.832 and GD / zero ratios fit D = 5 only). Reason: the claims' numbers are ratios; D = 10 is source "
    "000's.",
)
