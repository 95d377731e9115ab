"""What the studies read off trained models and explicit learners: the products a trained layer implements,
its eta and gamma, repeated application (`readoff`), and the explicit references' losses (`baselines`)."""
