package io.kvrouter.cluster.serialization;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.protobuf.ByteString;
import java.io.IOException;
import java.io.NotSerializableException;
import java.io.UncheckedIOException;
import java.util.Optional;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.typed.ActorRefResolver;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.serialization.SerializerWithStringManifest;
import org.apache.pekko.serialization.jackson.JacksonObjectMapperProvider;

/**
 * What kvrouter's protobuf serializers share: actor references in {@link ActorRefResolver}'s format, and the parts of
 * a message they leave to Jackson CBOR, written with the mapper of Pekko's jackson-cbor binding (kvrouter's records
 * as arrays), so those parts are encoded as that binding would encode them.
 */
public abstract class ProtoSerializer extends SerializerWithStringManifest {
  private final ExtendedActorSystem system;
  private final int identifier;
  private volatile ActorRefResolver resolver;
  private volatile ObjectMapper cbor;

  /** @param identifier the serializer's id on the wire (Pekko reserves 0–40) */
  protected ProtoSerializer(ExtendedActorSystem system, int identifier) {
    this.system = system;
    this.identifier = identifier;
  }

  @Override
  public final int identifier() {
    return identifier;
  }

  protected final ActorRefResolver resolver() {
    ActorRefResolver r = resolver;
    if (r == null) {
      r = ActorRefResolver.get(Adapter.toTyped(system));
      resolver = r;
    }
    return r;
  }

  private ObjectMapper cbor() {
    ObjectMapper m = cbor;
    if (m == null) {
      m = JacksonObjectMapperProvider.get(system).getOrCreate("jackson-cbor", Optional.empty());
      cbor = m;
    }
    return m;
  }

  protected final ByteString toCbor(Object value) {
    try {
      return ByteString.copyFrom(cbor().writeValueAsBytes(value));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** {@code bytes} read as a {@code type}; NotSerializableException naming {@code what} when they do not parse. */
  protected final <T> T fromCbor(ByteString bytes, Class<T> type, String what) throws NotSerializableException {
    try {
      return cbor().readValue(bytes.toByteArray(), type);
    } catch (IOException e) {
      throw malformed(what, e);
    }
  }

  protected static NotSerializableException malformed(String what, Exception cause) {
    NotSerializableException failure = new NotSerializableException("malformed " + what + ": " + cause.getMessage());
    failure.initCause(cause);
    return failure;
  }
}
