SET api = stable;
