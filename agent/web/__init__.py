"""Tools that read the web: fetching a page and searching."""
