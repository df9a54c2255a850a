"""The page, independent of its format: sections, tables, key figures and charts as plain data."""
