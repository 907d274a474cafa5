package io.kvrouter.server.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The two bits of the gRPC HTTP/2 wire format we write ourselves: grpc-message encoding and grpc-timeout. */
class WireFormatTest {
  @Test
  void percentEncodingFollowsTheGrpcSpec() {
    assertThat(StatusMapping.percentEncode("plain text")).isEqualTo("plain text");
    assertThat(StatusMapping.percentEncode("100%")).isEqualTo("100%25");
    assertThat(StatusMapping.percentEncode("é\n")).isEqualTo("%C3%A9%0A");
  }

  @Test
  void aTimeoutIsEncodedInTheFinestUnitThatFitsAndParsesBack() {
    assertThat(Deadlines.encode(Duration.ofNanos(99_999_999))).isEqualTo("99999999n");
    assertThat(Deadlines.encode(Duration.ofMillis(250))).isEqualTo("250000u");
    assertThat(Deadlines.encode(Duration.ofSeconds(5))).isEqualTo("5000000u");
    assertThat(Deadlines.encode(Duration.ofSeconds(500))).isEqualTo("500000m");
    assertThat(Deadlines.encode(Duration.ofDays(3))).isEqualTo("259200S");
    assertThat(Deadlines.encode(Duration.ofDays(3000))).isEqualTo("4320000M");
    assertThat(Deadlines.encode(Duration.ofSeconds(-1))).isEqualTo("0n");
    assertThat(Deadlines.encode(Duration.ofSeconds(Long.MAX_VALUE))).isEqualTo("2562047H");
    for (Duration d : new Duration[] {Duration.ofNanos(12_345), Duration.ofMillis(1_500), Duration.ofMinutes(90)}) {
      assertThat(Deadlines.parse(Deadlines.encode(d))).isEqualTo(d);
    }
  }
}
