//! Parser tests; more end-to-end cases live in tests/job_parser.rs.
