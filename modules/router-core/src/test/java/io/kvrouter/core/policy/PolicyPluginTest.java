package io.kvrouter.core.policy;

import static io.kvrouter.core.Fixtures.worker;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.kvrouter.core.admission.AdmissionSettings;
import io.kvrouter.core.admission.AdmissionState;
import io.kvrouter.core.error.RoutingError;
import io.kvrouter.core.error.RoutingException;
import io.kvrouter.core.selection.Candidates;
import io.kvrouter.core.selection.SelectionRequest;
import io.kvrouter.core.selection.SelectionView;
import io.kvrouter.core.selection.Selector;
import io.kvrouter.core.testkit.ManualClock;
import io.kvrouter.core.testkit.Requests;
import io.kvrouter.core.testkit.TestPolicies;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The policy plug-in point: the test-jar's {@link TestPolicies}, registered through META-INF/services, are found by
 * the registry and by SetPolicy; a picker that is not thread-safe never runs twice at once, whether the picks come
 * from many inline Selects or Books; bad names and bad providers are refused.
 */
class PolicyPluginTest {
  private final ManualClock clock = new ManualClock(1_000_000);
  private final AdmissionState state = new AdmissionState("m", AdmissionSettings.DEFAULTS, clock);
  private final ExecutorService pool = Executors.newFixedThreadPool(4);

  PolicyPluginTest() {
    for (String w : new String[] {"a", "b", "c"}) {
      state.register(worker(w));
    }
  }

  @AfterEach
  void stop() throws InterruptedException {
    pool.shutdownNow();
    assertThat(pool.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
  }

  private SelectionView select(String policy) {
    state.setPolicy(policy, Map.of("seed", "5"));
    return state.view();
  }

  @Test
  void providersPoliciesFollowTheBuiltInsInWireNameOrderWithTheirIndexes() {
    List<Policy> all = Policy.values();
    assertThat(all.subList(0, Policy.builtIns().size())).isEqualTo(Policy.builtIns());
    assertThat(all.subList(Policy.builtIns().size(), all.size())).extracting(Policy::wireName)
        .containsExactly(TestPolicies.ATOMIC, TestPolicies.CONCURRENT, TestPolicies.LOCKED, TestPolicies.SERIAL);
    for (int i = 0; i < all.size(); i++) {
      assertThat(all.get(i).index()).isEqualTo(i);
      assertThat(Policy.fromWireName(all.get(i).wireName())).isSameAs(all.get(i));
    }
    assertThat(Policy.fromWireName(TestPolicies.SERIAL).isBuiltIn()).isFalse();
    assertThat(Policy.fromWireName(TestPolicies.SERIAL).scorer()).isSameAs(Scorers.KV);
  }

  @Test
  void setPolicyNamesAPluginAndItsPickerPicksAsKvWouldFromTheSameState() {
    SelectionView view = select(TestPolicies.SERIAL);
    assertThat(view.policy().policy().wireName()).isEqualTo(TestPolicies.SERIAL);
    TestPolicies.Watched picker = TestPolicies.latest();
    SelectionRequest request = Requests.of("m", "", 64);
    int[] plugin = IntStream.range(0, 50)
        .map(i -> view.indexOf(Selector.select(view, request, new Candidates(), clock.millis()).rank())).toArray();
    assertThat(picker.state()).isEqualTo(new PickerState(5, 50));
    state.setPolicy("kv", Map.of("seed", "5"));
    SelectionView kv = state.view();
    int[] builtIn = IntStream.range(0, 50)
        .map(i -> kv.indexOf(Selector.select(kv, request, new Candidates(), clock.millis()).rank())).toArray();
    assertThat(plugin).containsExactly(builtIn);
    assertThat(IntStream.of(plugin).distinct().count()).as("ties spread over the three idle ranks").isEqualTo(3);
  }

  /** Four threads select through one view of the non-thread-safe plug-in: no pick overlaps another, none is lost. */
  @Test
  void concurrentPicksOfANonThreadSafePluginNeverOverlap() throws Exception {
    SelectionView view = select(TestPolicies.SERIAL);
    TestPolicies.Watched picker = TestPolicies.latest();
    int threads = 4;
    int picksPerThread = 5_000;
    CountDownLatch start = new CountDownLatch(1);
    List<Future<?>> done = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      done.add(pool.submit(() -> {
        SelectionRequest request = Requests.of("m", "", 64);
        Candidates scratch = new Candidates();
        start.await();
        for (int i = 0; i < picksPerThread; i++) {
          Selector.select(view, request, scratch, clock.millis());
        }
        return null;
      }));
    }
    start.countDown();
    for (Future<?> f : done) {
      f.get(60, TimeUnit.SECONDS);
    }
    assertThat(picker.overlaps()).isZero();
    assertThat(picker.mostInside()).isEqualTo(1);
    assertThat(picker.state().picks()).as("a plain counter under the lock loses no pick")
        .isEqualTo((long) threads * picksPerThread);
  }

  /** While one pick is held inside the non-thread-safe picker, a second Select waits on the slot's lock. */
  @Test
  void aSecondPickWaitsOutsideWhileTheFirstIsInsideTheNonThreadSafePicker() throws Exception {
    SelectionView view = select(TestPolicies.SERIAL);
    TestPolicies.Watched picker = TestPolicies.latest();
    CountDownLatch gate = new CountDownLatch(1);
    picker.holdPicksAt(gate);
    Future<?> first = pool.submit(() -> Selector.select(view, Requests.of("m", "", 16), new Candidates(), 0L));
    await().atMost(Duration.ofSeconds(30)).until(() -> picker.inside() == 1);
    AtomicReference<Thread> secondThread = new AtomicReference<>();
    Future<?> second = pool.submit(() -> {
      secondThread.set(Thread.currentThread());
      return Selector.select(view, Requests.of("m", "", 16), new Candidates(), 0L);
    });
    await().atMost(Duration.ofSeconds(30)).until(() -> secondThread.get() != null
        && secondThread.get().getState() == Thread.State.WAITING);
    assertThat(picker.inside()).as("the second pick is parked on the lock, not in the picker").isEqualTo(1);
    gate.countDown();
    first.get(30, TimeUnit.SECONDS);
    second.get(30, TimeUnit.SECONDS);
    assertThat(picker.overlaps()).isZero();
    assertThat(picker.state().picks()).isEqualTo(2);
  }

  /** The control: a plug-in that declares itself thread-safe is called without the lock, so two picks meet in it. */
  @Test
  void aThreadSafePluginsPicksRunConcurrently() throws Exception {
    SelectionView view = select(TestPolicies.CONCURRENT);
    TestPolicies.Watched picker = TestPolicies.latest();
    CountDownLatch gate = new CountDownLatch(1);
    picker.holdPicksAt(gate);
    Future<?> first = pool.submit(() -> Selector.select(view, Requests.of("m", "", 16), new Candidates(), 0L));
    Future<?> second = pool.submit(() -> Selector.select(view, Requests.of("m", "", 16), new Candidates(), 0L));
    await().atMost(Duration.ofSeconds(30)).until(() -> picker.inside() == 2);
    gate.countDown();
    first.get(30, TimeUnit.SECONDS);
    second.get(30, TimeUnit.SECONDS);
    assertThat(picker.mostInside()).isEqualTo(2);
  }

  @Test
  void anUnknownPluginNameIsRefusedWithUnknownPolicyAndChangesNothing() {
    state.setPolicy(TestPolicies.SERIAL, Map.of("seed", "5", "prefill_load_scale", "3"));
    SelectionView before = state.view();
    assertThatThrownBy(() -> state.setPolicy("testkit_no_such_plugin", Map.of("prefill_load_scale", "9")))
        .isInstanceOfSatisfying(RoutingException.class, e -> {
          assertThat(e.error().code()).isEqualTo(RoutingError.Code.INVALID_ARGUMENT);
          assertThat(e.error().reason()).isEqualTo(RoutingError.UNKNOWN_POLICY);
          assertThat(e.error().message()).contains("testkit_no_such_plugin").contains(TestPolicies.SERIAL)
              .contains("kv");
        });
    assertThat(state.view()).isSameAs(before);
    assertThat(state.view().policy().policy().wireName()).isEqualTo(TestPolicies.SERIAL);
    assertThat(state.view().policy().prefillLoadScale()).isEqualTo(3.0);
  }

  // ---- the registry's checks of providers

  private static PolicyProvider provider(PolicyProvider.Definition... definitions) {
    return () -> List.of(definitions);
  }

  private static PolicyProvider.Definition definition(String name) {
    return new PolicyProvider.Definition(name, Scorers.KV, state -> Pickers.create(Policy.KV, state));
  }

  @Test
  void aRegistryOfGoodProvidersOrdersTheirPoliciesByNameAfterTheBuiltIns() {
    List<Policy> all = Policy.registry(List.of(provider(definition("zeta")), provider(definition("alpha_1"))));
    assertThat(all).extracting(Policy::wireName).containsExactly("round_robin", "random", "least_in_flight",
        "power_of_two", "kv", "alpha_1", "zeta");
    assertThat(all.get(6).index()).isEqualTo(6);
    assertThat(all.get(6).newPicker(new PickerState(1, 0)).threadSafe()).isTrue();
  }

  @Test
  void providersWithBadPoliciesFailTheRegistryNamingTheProblem() {
    assertThatThrownBy(() -> Policy.registry(List.of(provider(definition("kv")))))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("'kv', which another policy has");
    assertThatThrownBy(() -> Policy.registry(List.of(provider(definition("twin")), provider(definition("twin")))))
        .hasMessageContaining("'twin', which another policy has");
    for (String bad : new String[] {"", "Upper", "with-dash", "9lives", "x".repeat(65)}) {
      assertThatThrownBy(() -> Policy.registry(List.of(provider(definition(bad))))).as("'%s'", bad)
          .hasMessageContaining("policy name '" + bad + "'");
    }
    assertThatThrownBy(() -> Policy.registry(List.of(provider(
        new PolicyProvider.Definition("no_scorer", null, state -> null))))).hasMessageContaining("without a scorer");
    assertThatThrownBy(() -> Policy.registry(List.of(provider(
        new PolicyProvider.Definition("no_pickers", Scorers.KV, null))))).hasMessageContaining("picker factory");
    PolicyProvider.Definition[] many = IntStream.range(0, Policy.MAX_POLICIES)
        .mapToObj(i -> definition("p" + i)).toArray(PolicyProvider.Definition[]::new);
    assertThatThrownBy(() -> Policy.registry(List.of(provider(many))))
        .hasMessageContaining("at most " + (Policy.MAX_POLICIES - Policy.builtIns().size()));
  }

  @Test
  void aFactoryThatMakesNoPickerFailsTheSwitchAndNotLater() {
    Policy broken = Policy.registry(List.of(provider(new PolicyProvider.Definition("broken", Scorers.KV,
        state -> null)))).get(5);
    assertThatThrownBy(() -> broken.newPicker(new PickerState(1, 0))).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("made no picker");
  }
}
