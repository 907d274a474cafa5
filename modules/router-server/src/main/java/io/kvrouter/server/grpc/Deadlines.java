package io.kvrouter.server.grpc;

import io.kvrouter.core.error.RoutingError;
import java.time.Duration;
import java.util.Optional;
import org.apache.pekko.grpc.javadsl.Metadata;

/**
 * The caller's deadline as the time it has left: from request metadata that knows it already ({@link Known}: the
 * netty binding's, from grpc-java's own deadline), else parsed from {@code grpc-timeout} (pekko-grpc does not enforce
 * it, so we do). It stays a duration from here to the admission actor, which bounds the Book on its own clock.
 */
public final class Deadlines {
  /** Request metadata that carries its call's deadline already, so nothing is encoded or parsed. */
  public interface Known {
    /** The time the caller has left, or null when it set no deadline. */
    Duration remaining();
  }

  /** The request header that carries the caller's remaining deadline. */
  public static final String HEADER = "grpc-timeout";
  private static final char[] UNITS = {'n', 'u', 'm', 'S', 'M', 'H'};
  private static final long MAX_AMOUNT = 100_000_000L;

  private Deadlines() {}

  /** The remaining time the caller gave this call, or null when it sent no deadline. */
  public static Duration remaining(Metadata metadata) {
    if (metadata instanceof Known known) {
      return known.remaining();
    }
    Optional<String> header = metadata.getText(HEADER);
    return header.map(Deadlines::parse).orElse(null);
  }

  /** Parses the gRPC wire form: up to 8 digits and a unit H, M, S, m, u or n. */
  public static Duration parse(String value) {
    if (value.length() < 2 || value.length() > 9) {
      throw malformed(value);
    }
    long amount;
    try {
      amount = Long.parseLong(value.substring(0, value.length() - 1));
    } catch (NumberFormatException e) {
      throw malformed(value);
    }
    if (amount < 0) {
      throw malformed(value);
    }
    return switch (value.charAt(value.length() - 1)) {
      case 'H' -> Duration.ofHours(amount);
      case 'M' -> Duration.ofMinutes(amount);
      case 'S' -> Duration.ofSeconds(amount);
      case 'm' -> Duration.ofMillis(amount);
      case 'u' -> Duration.ofNanos(amount * 1_000);
      case 'n' -> Duration.ofNanos(amount);
      default -> throw malformed(value);
    };
  }

  /** The gRPC wire form of {@code remaining}: at most 8 digits in the finest unit that holds it, rounded down. */
  public static String encode(Duration remaining) {
    long amount;
    try {
      amount = Math.max(0, remaining.toNanos());
    } catch (ArithmeticException e) {
      amount = Long.MAX_VALUE;
    }
    for (char unit : UNITS) {
      if (amount < MAX_AMOUNT) {
        return amount + String.valueOf(unit);
      }
      amount /= Character.isLowerCase(unit) ? 1_000 : 60;
    }
    return (MAX_AMOUNT - 1) + "H";
  }

  private static RuntimeException malformed(String value) {
    return RoutingError.invalid(RoutingError.MALFORMED,
        "malformed grpc-timeout '" + RoutingError.echo(value) + "'").toException();
  }
}
