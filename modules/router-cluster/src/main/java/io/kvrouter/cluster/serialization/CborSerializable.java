package io.kvrouter.cluster.serialization;

/** Marker for messages serialized with Jackson CBOR (bound in serialization config); router-core types need none. */
public interface CborSerializable {}
