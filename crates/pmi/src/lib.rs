//! PMI-1 and PMI-2 wire protocols: the client used by the library and the server side used by the launcher
