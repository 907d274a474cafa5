package io.kvrouter.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Metadata;
import io.grpc.Status;
import io.kvrouter.api.ReasonTrailer;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;

/** When {@code book --owner-direct} sends the Book to the target again: only when the owner was not reached. */
class OwnerDirectTest {

  @Test
  void onlyAnUnavailableWithoutAReasonCountsAsAnOwnerNotReached() {
    assertThat(OwnerDirect.unreachable(new CompletionException(Status.UNAVAILABLE.withDescription("io exception")
        .asRuntimeException()))).isTrue();
    Metadata trailers = new Metadata();
    trailers.put(ReasonTrailer.KEY, "RECOVERING");
    assertThat(OwnerDirect.unreachable(Status.UNAVAILABLE.asRuntimeException(trailers)))
        .as("the router answered: its refusal stands").isFalse();
    assertThat(OwnerDirect.unreachable(Status.DEADLINE_EXCEEDED.asRuntimeException())).isFalse();
    assertThat(OwnerDirect.unreachable(new IllegalStateException("not a status"))).isFalse();
  }
}
