-- 009: what each model embeds for a chunk, part of its embedding signature. 'chunk' is the
-- chunk's text alone, which is how every vector before this migration was made; 'context:v1'
-- puts the document's title and the chunk's heading above the text, and joins a short chunk
-- (a title line the splitter left alone) with the chunk after it. A model whose configured
-- input differs from its registered one has its passage vectors dropped and re-embedded
-- (garage/embed/registry.py), so one table never holds vectors made two ways.

ALTER TABLE embedding_models ADD COLUMN input text NOT NULL DEFAULT 'chunk';
