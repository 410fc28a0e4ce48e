#include "cluster/topic_positions.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cspd {
namespace {

using PositionsLines = std::vector<std::string>;

/// Every action TopicPositions asks for, one line each, in the order asked.
class PositionsRecorder final : public TopicPositions::Actions {
public:
    void deliver(std::string_view topic, const ClusterMessage& message) override {
        lines_.push_back("deliver " + std::string(topic) + " " + std::string(message.epoch) + "/" +
                         std::to_string(message.offset));
        delivered_.push_back(std::string(message.id) + "|" + std::string(message.origin) + "|" +
                             (message.binary ? "b" : "t") + "|" + std::string(message.data));
    }
    void gap(std::string_view topic) override { lines_.push_back("gap " + std::string(topic)); }
    void recover(std::string_view topic, std::string_view after_id) override {
        lines_.push_back("recover " + std::string(topic) + " after '" + std::string(after_id) + "'");
    }
    void ask_start(std::string_view topic) override { lines_.push_back("ask_start " + std::string(topic)); }

    /// The lines asked since the last call.
    PositionsLines drain() { return std::exchange(lines_, {}); }
    /// Each delivered message's id|origin|flag|data, since the start.
    const std::vector<std::string>& delivered() const { return delivered_; }

private:
    PositionsLines lines_;
    std::vector<std::string> delivered_;
};

/// One topic, "room", on a host named "me". Stream ids are opaque to TopicPositions: here
/// they read "EPOCH-OFFSET", so what a recovery asks after says which entry it names.
class TopicPositionsTest : public ::testing::Test {
protected:
    static constexpr std::string_view kRoom = "room";

    /// A message as Redis would give it, its strings kept alive by the fixture.
    ClusterMessage message_at(std::string_view epoch, std::uint64_t offset, std::string_view origin = "other",
                              std::string data = {}) {
        ClusterMessage made;
        made.epoch = keep(std::string(epoch));
        made.offset = offset;
        made.id = keep(std::string(epoch) + "-" + std::to_string(offset));
        made.origin = keep(std::string(origin));
        made.data = keep(data.empty() ? "d" + std::to_string(offset) : std::move(data));
        return made;
    }
    /// History entries first..last of `epoch`, all from another host.
    std::vector<ClusterMessage> history(std::string_view epoch, std::uint64_t first, std::uint64_t last) {
        std::vector<ClusterMessage> entries;
        for (std::uint64_t at = first; at <= last; ++at) entries.push_back(message_at(epoch, at));
        return entries;
    }
    void live_at(std::string_view epoch, std::uint64_t offset, std::string_view origin = "other") {
        positions_.live(kRoom, message_at(epoch, offset, origin), recorder_);
    }
    void answer(std::string_view epoch, std::uint64_t last_offset, const std::vector<ClusterMessage>& entries,
                bool more = false) {
        positions_.recovered(kRoom, epoch, last_offset, entries, more, recorder_);
    }
    /// The room subscribed, and its first live message (e1/offset) delivered: the place is e1/offset.
    void listening_at(std::uint64_t offset) {
        positions_.add(kRoom);
        positions_.subscribed(kRoom, recorder_);
        live_at("e1", offset);
        ASSERT_EQ(recorder_.drain(), (PositionsLines{"ask_start room", "deliver room e1/" + std::to_string(offset)}));
    }

    TopicPositions positions_{"me"};
    PositionsRecorder recorder_;

private:
    std::string_view keep(std::string text) { return kept_.emplace_back(std::move(text)); }
    std::deque<std::string> kept_;
};

// --- live messages -----------------------------------------------------------------------

TEST_F(TopicPositionsTest, AFirstLiveMessageWithNoPlaceIsDelivered) {
    positions_.add(kRoom);
    EXPECT_TRUE(positions_.has(kRoom));
    EXPECT_EQ(positions_.size(), 1u);
    positions_.subscribed(kRoom, recorder_);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"ask_start room"}));
    live_at("e1", 42);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"deliver room e1/42"}));
    EXPECT_EQ(positions_.recovered_count(), 0u);
    EXPECT_EQ(positions_.gap_count(), 0u);
}

TEST_F(TopicPositionsTest, InOrderLiveMessagesAreDelivered) {
    listening_at(5);
    live_at("e1", 6);
    live_at("e1", 7);
    live_at("e1", 8);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"deliver room e1/6", "deliver room e1/7", "deliver room e1/8"}));
    EXPECT_EQ(positions_.recovered_count(), 0u);
    EXPECT_EQ(positions_.gap_count(), 0u);
}

TEST_F(TopicPositionsTest, PassesTheMessageThroughUntouched) {
    positions_.add(kRoom);
    positions_.live(kRoom, message_at("e1", 1, "other", std::string("a b\nc\0d", 7)), recorder_);
    ClusterMessage binary = message_at("e1", 2, "other", "\x01\xff");
    binary.binary = true;
    positions_.live(kRoom, binary, recorder_);
    positions_.live(kRoom, message_at("e1", 4), recorder_);
    answer("e1", 3, {message_at("e1", 3, "third", "from history")});  // read before 4 was published
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"deliver room e1/1", "deliver room e1/2", "recover room after 'e1-2'",
                                                 "deliver room e1/3", "deliver room e1/4"}));
    EXPECT_EQ(recorder_.delivered(),
              (std::vector<std::string>{std::string("e1-1|other|t|a b\nc\0d", 20), "e1-2|other|b|\x01\xff",
                                        "e1-3|third|t|from history", "e1-4|other|t|d4"}));
}

TEST_F(TopicPositionsTest, OwnLiveMessagesMoveThePlaceButAreNotDelivered) {
    listening_at(5);
    live_at("e1", 6, "me");
    live_at("e1", 7, "me");
    EXPECT_EQ(recorder_.drain(), PositionsLines{});
    live_at("e1", 8);  // in order after the host's own: no recovery
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"deliver room e1/8"}));
}

TEST_F(TopicPositionsTest, OwnMessagesFromHistoryMoveThePlaceButAreNotDelivered) {
    listening_at(5);
    live_at("e1", 9);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after 'e1-5'"}));
    answer("e1", 9,
           {message_at("e1", 6), message_at("e1", 7, "me"), message_at("e1", 8, "me"), message_at("e1", 9)});
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"deliver room e1/6", "deliver room e1/9"}));
    EXPECT_EQ(positions_.recovered_count(), 2u);
    live_at("e1", 11, "me");  // the place is e1-9: a jump from there
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after 'e1-9'"}));
}

TEST_F(TopicPositionsTest, DuplicatesAreDropped) {
    listening_at(5);
    live_at("e1", 5);
    live_at("e1", 3);
    live_at("e1", 1);
    EXPECT_EQ(recorder_.drain(), PositionsLines{});
    live_at("e1", 6);
    live_at("e1", 6);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"deliver room e1/6"}));
}

TEST_F(TopicPositionsTest, MessagesOfATopicNotAddedAreIgnored) {
    positions_.add(kRoom);
    positions_.live("elsewhere", message_at("e1", 1), recorder_);
    positions_.subscribed("elsewhere", recorder_);
    positions_.started("elsewhere", "e1", 3, recorder_);
    positions_.recovered("elsewhere", "e1", 3, history("e1", 1, 3), false, recorder_);
    EXPECT_EQ(recorder_.drain(), PositionsLines{});
    EXPECT_FALSE(positions_.has("elsewhere"));
    EXPECT_EQ(positions_.size(), 1u);
}

TEST_F(TopicPositionsTest, TopicsKeepTheirOwnPlaces) {
    listening_at(5);
    positions_.add("lobby");
    positions_.live("lobby", message_at("x1", 100), recorder_);
    live_at("e1", 8);  // the room recovers...
    positions_.live("lobby", message_at("x1", 101), recorder_);  // ...the lobby does not wait
    live_at("e1", 9);
    answer("e1", 9, history("e1", 6, 9));
    EXPECT_EQ(recorder_.drain(),
              (PositionsLines{"deliver lobby x1/100", "recover room after 'e1-5'", "deliver lobby x1/101",
                              "deliver room e1/6", "deliver room e1/7", "deliver room e1/8", "deliver room e1/9"}));
}

// --- a jump, and what a recovery finds --------------------------------------------------

TEST_F(TopicPositionsTest, AnOffsetJumpRecoversFromTheLastIdAndHoldsLiveMessages) {
    listening_at(5);
    live_at("e1", 8);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after 'e1-5'"}));
    live_at("e1", 9);
    live_at("e1", 10);
    EXPECT_EQ(recorder_.drain(), PositionsLines{});  // held while the room recovers
    answer("e1", 9, history("e1", 6, 9));
    // 6..9 from the history, then what was held and not in it (10): each once, in order.
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"deliver room e1/6", "deliver room e1/7", "deliver room e1/8",
                                                 "deliver room e1/9", "deliver room e1/10"}));
    EXPECT_EQ(positions_.recovered_count(), 4u);
    EXPECT_EQ(positions_.gap_count(), 0u);
    live_at("e1", 11);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"deliver room e1/11"}));
}

TEST_F(TopicPositionsTest, AHeldMessageThatJumpsStartsAnotherRecovery) {
    listening_at(5);
    live_at("e1", 7);
    live_at("e1", 9);  // held: 8 is missing too
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after 'e1-5'"}));
    answer("e1", 7, history("e1", 6, 7));
    EXPECT_EQ(recorder_.drain(),
              (PositionsLines{"deliver room e1/6", "deliver room e1/7", "recover room after 'e1-7'"}));
    live_at("e1", 10);
    EXPECT_EQ(recorder_.drain(), PositionsLines{});
    answer("e1", 10, history("e1", 8, 10));
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"deliver room e1/8", "deliver room e1/9", "deliver room e1/10"}));
    EXPECT_EQ(positions_.gap_count(), 0u);
}

TEST_F(TopicPositionsTest, AHistoryTrimmedPastThePlaceSaysAGapOnceThenDeliversWhatIsThere) {
    listening_at(5);
    live_at("e1", 10);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after 'e1-5'"}));
    answer("e1", 10, history("e1", 8, 10));
    EXPECT_EQ(recorder_.drain(),
              (PositionsLines{"gap room", "deliver room e1/8", "deliver room e1/9", "deliver room e1/10"}));
    EXPECT_EQ(positions_.gap_count(), 1u);
    EXPECT_EQ(positions_.recovered_count(), 3u);
    live_at("e1", 11);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"deliver room e1/11"}));
}

TEST_F(TopicPositionsTest, AHistoryThatStartsRightAfterThePlaceIsNoGap) {
    listening_at(5);
    live_at("e1", 7);
    answer("e1", 7, history("e1", 6, 7));
    EXPECT_EQ(recorder_.drain(),
              (PositionsLines{"recover room after 'e1-5'", "deliver room e1/6", "deliver room e1/7"}));
    EXPECT_EQ(positions_.gap_count(), 0u);
}

TEST_F(TopicPositionsTest, AnEmptyHistoryPastThePlaceSaysAGapAndTakesItsLastOffset) {
    listening_at(5);
    positions_.link_lost();
    positions_.subscribed(kRoom, recorder_);
    answer("e1", 12, {});  // everything after e1-5 was trimmed (expired)
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after 'e1-5'", "gap room"}));
    EXPECT_EQ(positions_.gap_count(), 1u);
    live_at("e1", 13);  // the place is 12 now
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"deliver room e1/13"}));
}

TEST_F(TopicPositionsTest, AfterAnEmptyHistoryTheIdIsUnknownSoTheNextRecoveryReadsFromTheStart) {
    listening_at(5);
    positions_.link_lost();
    positions_.subscribed(kRoom, recorder_);
    answer("e1", 12, {});
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after 'e1-5'", "gap room"}));
    live_at("e1", 14);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after ''"}));
    answer("e1", 14, history("e1", 3, 14));  // what the stream holds now, from its start
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"deliver room e1/13", "deliver room e1/14"}));
    EXPECT_EQ(positions_.gap_count(), 1u);
}

TEST_F(TopicPositionsTest, AnEmptyHistoryNotPastThePlaceIsNoGap) {
    listening_at(5);
    positions_.link_lost();
    positions_.subscribed(kRoom, recorder_);
    answer("e1", 5, {});
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after 'e1-5'"}));
    live_at("e1", 6);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"deliver room e1/6"}));
    EXPECT_EQ(positions_.gap_count(), 0u);
}

TEST_F(TopicPositionsTest, PagesAskForTheNextAfterTheLastEntry) {
    listening_at(5);
    live_at("e1", 11);
    answer("e1", 11, history("e1", 6, 8), true);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after 'e1-5'", "deliver room e1/6", "deliver room e1/7",
                                                 "deliver room e1/8", "recover room after 'e1-8'"}));
    live_at("e1", 12);  // still recovering: held
    EXPECT_EQ(recorder_.drain(), PositionsLines{});
    answer("e1", 11, history("e1", 9, 11));
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"deliver room e1/9", "deliver room e1/10", "deliver room e1/11",
                                                 "deliver room e1/12"}));
    EXPECT_EQ(positions_.recovered_count(), 6u);
}

TEST_F(TopicPositionsTest, ATrimmedHistoryReadInPagesSaysItsGapOnce) {
    listening_at(5);
    live_at("e1", 13);
    answer("e1", 13, history("e1", 9, 10), true);
    answer("e1", 13, history("e1", 11, 13));
    EXPECT_EQ(recorder_.drain(),
              (PositionsLines{"recover room after 'e1-5'", "gap room", "deliver room e1/9", "deliver room e1/10",
                              "recover room after 'e1-10'", "deliver room e1/11", "deliver room e1/12",
                              "deliver room e1/13"}));
    EXPECT_EQ(positions_.gap_count(), 1u);
}

// The place came from started() (no id): after a cut the history is read from its start, and
// pages that hold only what this host had already must still move the reading on.
TEST_F(TopicPositionsTest, PagesOfEntriesTheHostHadMoveOnToTheNextPage) {
    positions_.add(kRoom);
    positions_.subscribed(kRoom, recorder_);
    positions_.started(kRoom, "e1", 6, recorder_);
    positions_.link_lost();
    positions_.subscribed(kRoom, recorder_);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"ask_start room", "recover room after ''"}));
    answer("e1", 8, history("e1", 1, 3), true);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after 'e1-3'"}));
    answer("e1", 8, history("e1", 4, 6), true);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after 'e1-6'"}));
    answer("e1", 8, history("e1", 7, 8));
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"deliver room e1/7", "deliver room e1/8"}));
    EXPECT_EQ(positions_.gap_count(), 0u);
}

TEST_F(TopicPositionsTest, AStaleRecoveredAnswerIsIgnored) {
    listening_at(5);
    answer("e1", 9, history("e1", 6, 9));  // nothing was asked
    EXPECT_EQ(recorder_.drain(), PositionsLines{});
    live_at("e1", 8);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after 'e1-5'"}));
    positions_.link_lost();
    answer("e1", 9, history("e1", 6, 9));  // asked before the cut
    EXPECT_EQ(recorder_.drain(), PositionsLines{});
    positions_.subscribed(kRoom, recorder_);
    answer("e1", 9, history("e1", 6, 9));
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after 'e1-5'", "deliver room e1/6", "deliver room e1/7",
                                                 "deliver room e1/8", "deliver room e1/9"}));
    answer("e1", 9, history("e1", 6, 9));  // answered twice: the second is not heard
    EXPECT_EQ(recorder_.drain(), PositionsLines{});
}

// --- cuts and epochs --------------------------------------------------------------------

TEST_F(TopicPositionsTest, ALinkLostThenSubscribedRecoversFromThePlace) {
    listening_at(5);
    live_at("e1", 6);
    positions_.link_lost();
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"deliver room e1/6"}));
    positions_.subscribed(kRoom, recorder_);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after 'e1-6'"}));
    live_at("e1", 10);  // held
    answer("e1", 9, history("e1", 7, 9));
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"deliver room e1/7", "deliver room e1/8", "deliver room e1/9",
                                                 "deliver room e1/10"}));
    EXPECT_EQ(positions_.gap_count(), 0u);
    EXPECT_EQ(positions_.recovered_count(), 3u);
}

TEST_F(TopicPositionsTest, ALinkLostBeforeAnyPlaceAsksWhereTheTopicStandsAgain) {
    positions_.add(kRoom);
    positions_.subscribed(kRoom, recorder_);
    positions_.link_lost();
    positions_.subscribed(kRoom, recorder_);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"ask_start room", "ask_start room"}));
    positions_.started(kRoom, "e1", 4, recorder_);
    live_at("e1", 5);
    // What was published while the link was down is unknown to it: said.
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"gap room", "deliver room e1/5"}));
}

TEST_F(TopicPositionsTest, ANewEpochAfterACutRecoversFromTheStartAndSaysAGap) {
    listening_at(5);
    positions_.link_lost();
    positions_.subscribed(kRoom, recorder_);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after 'e1-5'"}));
    // The new stream's ids are later than e1-5's, so it gives entries: not read after an old id.
    answer("e2", 3, history("e2", 1, 3));
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after ''"}));
    answer("e2", 3, history("e2", 1, 3));
    EXPECT_EQ(recorder_.drain(),
              (PositionsLines{"gap room", "deliver room e2/1", "deliver room e2/2", "deliver room e2/3"}));
    EXPECT_EQ(positions_.gap_count(), 1u);
    live_at("e2", 4);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"deliver room e2/4"}));
}

TEST_F(TopicPositionsTest, ANewEpochWhileListeningAtOffsetOneIsDeliveredWithoutAGap) {
    listening_at(5);
    live_at("e2", 1);
    live_at("e2", 2);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"deliver room e2/1", "deliver room e2/2"}));
    EXPECT_EQ(positions_.gap_count(), 0u);
    live_at("e1", 6);  // the old history's: it is not this one's next
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after ''"}));
}

TEST_F(TopicPositionsTest, ANewEpochWhileListeningPastOffsetOneRecoversFromTheStart) {
    listening_at(5);
    live_at("e2", 3);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after ''"}));
    live_at("e2", 4);
    answer("e2", 3, history("e2", 1, 3));
    EXPECT_EQ(recorder_.drain(),
              (PositionsLines{"deliver room e2/1", "deliver room e2/2", "deliver room e2/3", "deliver room e2/4"}));
    EXPECT_EQ(positions_.gap_count(), 0u);  // the new history is whole from 1
}

TEST_F(TopicPositionsTest, ANewEpochWhoseHistoryIsNotWholeSaysAGap) {
    listening_at(5);
    live_at("e2", 5);
    answer("e2", 5, history("e2", 3, 5));
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after ''", "gap room", "deliver room e2/3",
                                                 "deliver room e2/4", "deliver room e2/5"}));
    EXPECT_EQ(positions_.gap_count(), 1u);
}

TEST_F(TopicPositionsTest, RedisEmptiedDuringACutSaysAGap) {
    listening_at(5);
    positions_.link_lost();
    positions_.subscribed(kRoom, recorder_);
    answer("", 0, {});
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after 'e1-5'", "recover room after ''"}));
    answer("", 0, {});
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"gap room"}));
    EXPECT_EQ(positions_.gap_count(), 1u);
    live_at("e3", 1);  // the first message of the history that begins now
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"deliver room e3/1"}));
    EXPECT_EQ(positions_.gap_count(), 1u);
}

TEST_F(TopicPositionsTest, ATopicNeverPublishedToIsNoGapAfterACut) {
    positions_.add(kRoom);
    positions_.subscribed(kRoom, recorder_);
    positions_.started(kRoom, "", 0, recorder_);
    positions_.link_lost();
    positions_.subscribed(kRoom, recorder_);
    answer("", 0, {});
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"ask_start room", "recover room after ''"}));
    positions_.link_lost();
    positions_.subscribed(kRoom, recorder_);
    answer("e1", 2, history("e1", 1, 2));  // its first messages came during the cut
    EXPECT_EQ(recorder_.drain(),
              (PositionsLines{"recover room after ''", "deliver room e1/1", "deliver room e1/2"}));
    EXPECT_EQ(positions_.gap_count(), 0u);
}

// A recovery asked before a cut carried live messages held: after it they are read from the
// history again (where they are, or a gap is said), not taken from what was held.
TEST_F(TopicPositionsTest, MessagesHeldBeforeACutDoNotOutliveItsNewEpoch) {
    listening_at(5);
    live_at("e1", 7);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after 'e1-5'"}));
    positions_.link_lost();
    positions_.subscribed(kRoom, recorder_);
    answer("e2", 2, history("e2", 1, 2));
    answer("e2", 2, history("e2", 1, 2));
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after 'e1-5'", "recover room after ''", "gap room",
                                                 "deliver room e2/1", "deliver room e2/2"}));
    live_at("e2", 3);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"deliver room e2/3"}));
}

TEST_F(TopicPositionsTest, MessagesHeldBeforeACutAreReadFromTheHistory) {
    listening_at(5);
    live_at("e1", 7);
    positions_.link_lost();
    positions_.subscribed(kRoom, recorder_);
    answer("e1", 8, history("e1", 6, 8));
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after 'e1-5'", "recover room after 'e1-5'",
                                                 "deliver room e1/6", "deliver room e1/7", "deliver room e1/8"}));
    EXPECT_EQ(positions_.gap_count(), 0u);
}

// --- started() and remove() -------------------------------------------------------------

TEST_F(TopicPositionsTest, StartedSetsThePlace) {
    positions_.add(kRoom);
    positions_.subscribed(kRoom, recorder_);
    positions_.started(kRoom, "e1", 10, recorder_);
    live_at("e1", 11);
    live_at("e1", 11);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"ask_start room", "deliver room e1/11"}));
}

// The answer to where the topic stood was read before a message the subscription had already
// brought (two connections, no order between them): that message is still new.
TEST_F(TopicPositionsTest, AMessageTheSubscriptionBroughtBeforeTheStartIsStillDelivered) {
    positions_.add(kRoom);
    positions_.subscribed(kRoom, recorder_);
    positions_.started(kRoom, "e1", 10, recorder_);
    live_at("e1", 9);
    live_at("e1", 10);
    live_at("e1", 10);
    live_at("e1", 11);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"ask_start room", "deliver room e1/9", "deliver room e1/10",
                                                 "deliver room e1/11"}));
    EXPECT_EQ(positions_.gap_count(), 0u);
}

// Redis went back (a snapshot, a failover): the same epoch gives offsets this host had, on entries
// newer than its own. A gap, then those messages.
TEST_F(TopicPositionsTest, OffsetsGivenAgainOnNewerEntriesAreAGapThenDelivered) {
    listening_at(10);
    ClusterMessage again = message_at("e1", 8);
    again.id = "99999-0";  // added after e1-10 (whose time reads 0)
    positions_.live(kRoom, again, recorder_);
    live_at("e1", 9);  // the next after it
    live_at("e1", 9);  // had it
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"gap room", "deliver room e1/8", "deliver room e1/9"}));
}

TEST_F(TopicPositionsTest, AHistoryThatWentBackIsAGap) {
    listening_at(10);
    positions_.link_lost();
    positions_.subscribed(kRoom, recorder_);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after 'e1-10'"}));
    ClusterMessage newer = message_at("e1", 7);
    newer.id = "99999-0";
    answer("e1", 7, {newer});
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"gap room", "deliver room e1/7"}));
    live_at("e1", 8);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"deliver room e1/8"}));
}

TEST_F(TopicPositionsTest, ASubscriptionWhosePlaceACutHidIsToldAGap) {
    positions_.add(kRoom);
    positions_.subscribed(kRoom, recorder_);
    positions_.link_lost();  // before where it stood was known
    positions_.subscribed(kRoom, recorder_);
    positions_.started(kRoom, "e1", 30, recorder_);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"ask_start room", "ask_start room", "gap room"}));
}

TEST_F(TopicPositionsTest, AJumpFromAStartedPlaceReadsTheHistoryFromItsStart) {
    positions_.add(kRoom);
    positions_.started(kRoom, "e1", 10, recorder_);
    live_at("e1", 12);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after ''"}));  // no id is known yet
    answer("e1", 12, history("e1", 8, 12));
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"deliver room e1/11", "deliver room e1/12"}));
    EXPECT_EQ(positions_.gap_count(), 0u);
}

TEST_F(TopicPositionsTest, StartedDoesNotMoveAPlaceALiveMessageSet) {
    positions_.add(kRoom);
    positions_.subscribed(kRoom, recorder_);
    live_at("e1", 11);
    positions_.started(kRoom, "e1", 20, recorder_);  // asked before 11 came, answered after
    live_at("e1", 12);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"ask_start room", "deliver room e1/11", "deliver room e1/12"}));
}

TEST_F(TopicPositionsTest, StartedWithNoEpochThenAFirstMessage) {
    positions_.add(kRoom);
    positions_.started(kRoom, "", 0, recorder_);
    live_at("e1", 1);
    live_at("e1", 2);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"deliver room e1/1", "deliver room e1/2"}));
    EXPECT_EQ(positions_.gap_count(), 0u);
}

TEST_F(TopicPositionsTest, RemoveForgetsATopic) {
    listening_at(5);
    live_at("e1", 8);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after 'e1-5'"}));
    positions_.remove(kRoom);
    EXPECT_FALSE(positions_.has(kRoom));
    EXPECT_EQ(positions_.size(), 0u);
    answer("e1", 8, history("e1", 6, 8));
    live_at("e1", 9);
    positions_.subscribed(kRoom, recorder_);
    positions_.started(kRoom, "e1", 9, recorder_);
    positions_.link_lost();
    EXPECT_EQ(recorder_.drain(), PositionsLines{});
    EXPECT_EQ(positions_.size(), 0u);
    positions_.add(kRoom);  // subscribed again: a fresh place, nothing held
    positions_.subscribed(kRoom, recorder_);
    live_at("e1", 20);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"ask_start room", "deliver room e1/20"}));
}

// --- held messages ------------------------------------------------------------------------

TEST_F(TopicPositionsTest, AsManyHeldMessagesAsTheLimitAreAllDelivered) {
    listening_at(5);
    for (std::uint64_t at = 7; at < 7 + TopicPositions::kMaxHeld; ++at) live_at("e1", at);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after 'e1-5'"}));
    answer("e1", 6, history("e1", 6, 6));
    const PositionsLines lines = recorder_.drain();
    ASSERT_EQ(lines.size(), 1 + TopicPositions::kMaxHeld);
    EXPECT_EQ(lines.front(), "deliver room e1/6");
    EXPECT_EQ(lines[1], "deliver room e1/7");
    EXPECT_EQ(lines.back(), "deliver room e1/" + std::to_string(6 + TopicPositions::kMaxHeld));
}

TEST_F(TopicPositionsTest, MessagesHeldPastTheLimitAreReadFromTheHistoryInstead) {
    listening_at(5);
    for (std::uint64_t at = 7; at <= 7 + TopicPositions::kMaxHeld; ++at) live_at("e1", at);  // one too many
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after 'e1-5'"}));
    answer("e1", 6, history("e1", 6, 6));
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"deliver room e1/6", "recover room after 'e1-6'"}));
    answer("e1", 9, history("e1", 7, 9));
    // What was held is gone: only the history's entries, and no further recovery.
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"deliver room e1/7", "deliver room e1/8", "deliver room e1/9"}));
    live_at("e1", 10);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"deliver room e1/10"}));
}

TEST_F(TopicPositionsTest, HeldBytesPastTheLimitAreReadFromTheHistoryInstead) {
    listening_at(5);
    live_at("e1", 7);
    positions_.live(kRoom, message_at("e1", 8, "other", std::string(TopicPositions::kMaxHeldBytes, 'x')), recorder_);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after 'e1-5'"}));
    answer("e1", 6, history("e1", 6, 6));
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"deliver room e1/6", "recover room after 'e1-6'"}));
}

TEST_F(TopicPositionsTest, AJumpThenANewEpochSaysAGapAndDropsWhatWasHeldOfTheOldOne) {
    listening_at(1);
    live_at("e1", 3);  // 2 was missed live: held, and read from the history
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after 'e1-1'"}));
    // Meanwhile the keys went (FLUSHALL): another history, read whole from its start.
    answer("e2", 1, history("e2", 1, 1));
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after ''"}));
    answer("e2", 1, history("e2", 1, 1));
    // e1's 2 and the held 3 are gone with their history: said, then the new history is delivered.
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"gap room", "deliver room e2/1"}));
    live_at("e2", 2);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"deliver room e2/2"}));
}

TEST_F(TopicPositionsTest, ASkipMarkerIsAGapElsewhereAndNoneWhereThePublishesStayed) {
    listening_at(4);
    ClusterMessage hole = message_at("e1", 6);  // 5 and 6 were kept by their host
    hole.skip = true;
    positions_.live(kRoom, hole, recorder_);
    live_at("e1", 7);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"gap room", "deliver room e1/7"}));
    ClusterMessage mine = message_at("e1", 8, "me");  // this host kept it: its subscribers had it
    mine.skip = true;
    positions_.live(kRoom, mine, recorder_);
    live_at("e1", 9);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"deliver room e1/9"}));
}

TEST_F(TopicPositionsTest, OffsetsPastTheLastEntryAreAGapAfterWhatCameBeforeThem) {
    listening_at(4);
    positions_.link_lost();
    positions_.subscribed(kRoom, recorder_);
    // 5 and 6 have entries; 7 and 8 never reached Redis (a skip marker this host missed in the cut).
    answer("e1", 8, history("e1", 5, 6));
    live_at("e1", 9);
    EXPECT_EQ(recorder_.drain(), (PositionsLines{"recover room after 'e1-4'", "deliver room e1/5", "deliver room e1/6",
                                                 "gap room", "deliver room e1/9"}));
    EXPECT_EQ(positions_.gap_count(), 1u);
}

}  // namespace
}  // namespace cspd
