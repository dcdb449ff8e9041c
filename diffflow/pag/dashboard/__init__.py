"""The live dashboard of a program activity graph: ``diffflow pag serve`` (see
:mod:`.server`); :mod:`.views` computes what it shows."""
