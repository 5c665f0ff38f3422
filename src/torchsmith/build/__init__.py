"""From-source builds: detect the project, configure (pure), preflight (pure), run (executor)."""
