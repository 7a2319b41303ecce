"""Protocol fakes: stand-ins, written from public API documentation, for servers that cannot
run on this machine (Ollama, LM Studio). Named as fakes wherever they are used."""
