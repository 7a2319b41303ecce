-- 007: chunks are looked up by the hash of their text, so the same text is embedded once per
-- model (garage/embed/backfill.py copies a known vector instead of calling the model).

CREATE INDEX chunks_text_sha256_idx ON chunks (text_sha256);
