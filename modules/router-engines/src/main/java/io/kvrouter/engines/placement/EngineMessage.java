package io.kvrouter.engines.placement;

/** Messages of the engine placement that cross nodes: bound to Jackson CBOR in this module's reference.conf. */
public interface EngineMessage {}
