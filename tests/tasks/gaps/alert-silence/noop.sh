# Only lists the silences.
amtool silence query
