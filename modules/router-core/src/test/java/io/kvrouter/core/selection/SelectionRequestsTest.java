package io.kvrouter.core.selection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.hashing.BlockHasher;
import java.util.Collections;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class SelectionRequestsTest {
  private final SelectionRequests requests = new SelectionRequests(RequestLimits.defaults());

  private static SelectionRequests.Fields fields(int[] tokens, long[] hashes, int isl, String salt,
      List<String> excluded) {
    return new SelectionRequests.Fields("m", "r", tokens, tokens == null ? 0 : tokens.length, hashes,
        hashes == null ? 0 : hashes.length, isl, 7, "lora", salt, null, null, List.of(), excluded, 3, null, null, null);
  }

  private static RoutingError rejection(Runnable call) {
    try {
      call.run();
    } catch (RoutingException e) {
      return e.error();
    }
    throw new AssertionError("expected a rejection");
  }

  @Test
  void tokenIdsAreHashedIntoSequenceHashesSeededBySaltAndLora() {
    int[] tokens = IntStream.range(0, 40).toArray();
    SelectionRequest request = requests.toSelectionRequest(fields(tokens, null, 0, "s", List.of("w1")), true, 16);
    assertThat(request.islTokens()).isEqualTo(40);
    assertThat(request.blockHashes()).containsExactly(
        BlockHasher.sequenceHashes(tokens, 16, BlockHasher.seed("s", "lora")));
    assertThat(request.excludedWorkers()).containsExactly("w1");
    assertThat(request.expectedOutputTokens()).isEqualTo(7);
    assertThat(request.priority()).isEqualTo(3);
  }

  @Test
  void localBlockHashesAreChainedAsTheRouterChainsThem() {
    int[] tokens = IntStream.range(0, 48).toArray();
    long seed = BlockHasher.seed(null, "lora");
    long[] local = BlockHasher.localBlockHashes(tokens, 16, seed);
    SelectionRequest request = requests.toSelectionRequest(fields(null, local.clone(), 50, null, List.of()), true, 16);
    assertThat(request.islTokens()).isEqualTo(50);
    assertThat(request.blockHashes()).containsExactly(BlockHasher.sequenceHashes(tokens, 16, seed));
  }

  @Test
  void malformedPromptsAndOversizedListsAreRejected() {
    assertThat(rejection(() -> requests.toSelectionRequest(fields(new int[] {1}, new long[] {1}, 0, null, List.of()),
        true, 16)).reason()).isEqualTo(RoutingError.MALFORMED);
    assertThat(rejection(() -> requests.toSelectionRequest(fields(new int[] {1, 2}, null, 3, null, List.of()),
        true, 16)).reason()).isEqualTo(RoutingError.MALFORMED);
    assertThat(rejection(() -> requests.toSelectionRequest(fields(null, new long[] {1, 2}, 20, null, List.of()),
        true, 16)).reason()).isEqualTo(RoutingError.MALFORMED);
    assertThat(rejection(() -> requests.toSelectionRequest(fields(null, null, 0, null, List.of()), true, 16))
        .reason()).isEqualTo(RoutingError.INVALID_SIZE);
    assertThat(rejection(() -> requests.toSelectionRequest(fields(new int[] {1}, null, 0, null,
        Collections.nCopies(1_025, "w")), true, 16)).reason()).isEqualTo(RoutingError.TOO_MANY_ITEMS);
    assertThat(rejection(() -> requests.toSelectionRequest(fields(new int[] {1}, null, 0, null,
        List.of("w".repeat(257))), true, 16)).reason()).isEqualTo(RoutingError.FIELD_TOO_LONG);
    assertThatThrownBy(() -> requests.toSelectionRequest(fields(new int[] {1}, null, 0, "x".repeat(300), List.of()),
        true, 16)).isInstanceOf(RoutingException.class);
  }

  @Test
  void anUnknownBlockSizeHashesNothing() {
    SelectionRequest request = requests.toSelectionRequest(fields(new int[] {1, 2, 3}, null, 0, null, List.of()),
        false, 0);
    assertThat(request.blockHashes()).isEmpty();
    assertThat(request.islTokens()).isEqualTo(3);
  }
}
