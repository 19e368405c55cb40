"""Helpers for tests and benchmarks: a throwaway PostgreSQL server on 127.0.0.1."""

from wannabet.testing.postgres import PostgresUnavailable, ThrowawayPostgres, find_postgres_bindir

__all__ = ["PostgresUnavailable", "ThrowawayPostgres", "find_postgres_bindir"]
