"""The Spark sink `df.write.format("kstream")` / `writeStream.format("kstream")`: exactly-once writes."""
