"""Output: terminal tables, JSON, Markdown and CSV."""
