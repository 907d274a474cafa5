package io.kvrouter.server.transport;

import io.grpc.Context;
import io.grpc.Deadline;
import io.kvrouter.server.grpc.Deadlines;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.grpc.javadsl.Metadata;
import org.apache.pekko.grpc.javadsl.MetadataBuilder;
import org.apache.pekko.grpc.javadsl.MetadataEntry;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.util.ByteString;

/**
 * The request metadata the power APIs read, for a call grpc-java serves: grpc-java consumes {@code grpc-timeout}
 * into the call's deadline, which {@link Deadlines#remaining} reads as it is ({@link Deadlines.Known}: the time left
 * when a service reads it). A caller that lists the metadata sees {@code grpc-timeout} written back from it. Nothing
 * is built unless read (Select never reads it).
 */
final class CallMetadata implements Metadata, Deadlines.Known {
  private static final Metadata NONE = MetadataBuilder.empty();

  private final Deadline deadline;
  private Metadata built;

  private CallMetadata(Deadline deadline) {
    this.deadline = deadline;
  }

  /** The metadata of the call whose handler runs on this thread (grpc-java attaches the call's Context). */
  static Metadata current() {
    Deadline deadline = Context.current().getDeadline();
    return deadline == null ? NONE : new CallMetadata(deadline);
  }

  @Override
  public Duration remaining() {
    return Duration.ofNanos(Math.max(0, deadline.timeRemaining(TimeUnit.NANOSECONDS)));
  }

  private String grpcTimeout() {
    return Deadlines.encode(remaining());
  }

  /** The same as a map, for a caller that lists the metadata. */
  private Metadata built() {
    if (built == null) {
      built = new MetadataBuilder().addText(Deadlines.HEADER, grpcTimeout()).build();
    }
    return built;
  }

  @Override
  public Optional<String> getText(String key) {
    return key.equals(Deadlines.HEADER) ? Optional.of(grpcTimeout()) : Optional.empty();
  }

  @Override
  public Optional<ByteString> getBinary(String key) {
    return Optional.empty();
  }

  @Override
  public Map<String, List<MetadataEntry>> asMap() {
    return built().asMap();
  }

  @Override
  public List<Pair<String, MetadataEntry>> asList() {
    return built().asList();
  }

  @Override
  public org.apache.pekko.grpc.scaladsl.Metadata asScala() {
    return built().asScala();
  }
}
