package io.kvrouter.cluster;

/** Marker for messages serialized with Jackson CBOR (bound in serialization config); router-core types need none. */
public interface CborSerializable {}
