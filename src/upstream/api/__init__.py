"""HTTP adapters: parse, call one service function, render. No lineage logic here."""
