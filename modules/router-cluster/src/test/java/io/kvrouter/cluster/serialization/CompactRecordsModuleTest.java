package io.kvrouter.cluster.serialization;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.typesafe.config.ConfigFactory;
import io.kvrouter.core.load.RankLoad;
import io.kvrouter.core.model.Rank;
import io.kvrouter.core.selection.SelectionResult;
import java.util.Optional;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.serialization.jackson.JacksonObjectMapperProvider;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The CBOR mapper Pekko builds from router-cluster's config (the one Artery uses): kvrouter's records are arrays of
 * their components, a record that nests itself stays a map and still round-trips, and an array one component longer
 * (a newer node's) or shorter (an older node's) still reads.
 */
class CompactRecordsModuleTest {
  private static ActorSystem<Void> system;
  private static ObjectMapper cbor;

  @BeforeAll
  static void start() {
    system = ActorSystem.create(Behaviors.empty(), "compact-records",
        ConfigFactory.parseString("pekko.actor.provider = local").withFallback(ConfigFactory.load()));
    cbor = JacksonObjectMapperProvider.get(Adapter.toClassic(system)).getOrCreate("jackson-cbor", Optional.empty());
  }

  @AfterAll
  static void stop() {
    system.terminate();
  }

  @Test
  void aRecordIsWrittenAsTheArrayOfItsComponentsAndReadBack() throws Exception {
    RankLoad load = new RankLoad(9, 3, 8192, 512);
    byte[] bytes = cbor.writeValueAsBytes(load);
    JsonNode tree = cbor.readTree(bytes);
    assertThat(tree.isArray()).isTrue();
    assertThat(tree).hasSize(6); // seq, in flight, prefill, decode, recent bookings and their time
    assertThat(tree.get(2).asLong()).isEqualTo(8192);
    assertThat(new String(bytes, java.nio.charset.StandardCharsets.ISO_8859_1)).doesNotContain("prefillTokens");
    assertThat(cbor.readValue(bytes, RankLoad.class)).isEqualTo(load);
  }

  @Test
  void aRecordWithAComponentOfItsOwnTypeStaysAMapAndRoundTripsWithItsNestedValue() throws Exception {
    SelectionResult decode = new SelectionResult(new Rank("decode-0", 1), "http://d:8000", "eu", 0, 0, 0.5,
        new RankLoad(2, 1, 0, 7), 4, "kv");
    SelectionResult pair = new SelectionResult(new Rank("prefill-0", 0), "http://p:8000", "eu", 12, 192, 0.75,
        new RankLoad(1, 2, 300, 0), 4, "kv").withDecode(decode);
    byte[] bytes = cbor.writeValueAsBytes(pair);
    JsonNode tree = cbor.readTree(bytes);
    assertThat(tree.isObject()).isTrue();
    assertThat(tree.get("rank").isArray()).isTrue();
    assertThat(cbor.readValue(bytes, SelectionResult.class)).isEqualTo(pair);
  }

  @Test
  void anArrayWithAComponentMoreOrLessStillReads() throws Exception {
    ArrayNode longer = (ArrayNode) cbor.readTree(cbor.writeValueAsBytes(new RankLoad(9, 3, 8192, 512)));
    longer.add("a component a newer node appended");
    assertThat(cbor.readValue(cbor.writeValueAsBytes(longer), RankLoad.class))
        .isEqualTo(new RankLoad(9, 3, 8192, 512));
    ArrayNode shorter = (ArrayNode) cbor.readTree(cbor.writeValueAsBytes(new RankLoad(9, 3, 8192, 512)));
    shorter.remove(3);
    assertThat(cbor.readValue(cbor.writeValueAsBytes(shorter), RankLoad.class))
        .isEqualTo(new RankLoad(9, 3, 8192, 0));
  }
}
