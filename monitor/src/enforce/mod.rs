//! Enforcement backends (guardrail): seccomp user notification fallback.
