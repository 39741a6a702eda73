import Synchronization

/// Row numbers found by a 64-bit hash (`IdHash`, already mixed): open addressing with linear probing, at most half
/// full. Each slot holds the row number and the high half of its hash, so a probe passes other rows without reading
/// them: a lookup that misses (most of a plan's side-input lookups) reads one cache line of this table and nothing else.
/// The owner keeps the rows and their hashes (for growing) and says whether a row whose hash half matched is the one.
@usableFromInline struct HashSlots: Sendable {
    /// `tag | (row + 1)`; 0 marks an empty slot. A power of two long.
    @usableFromInline var slots: [UInt64] = []
    /// A bit for each value of some of the hash's high bits, set when a row's hash has it (4 bits a slot, so 8 to 16 a
    /// row): a clear bit settles a lookup of an absent key in a table 16 times smaller than the slots. Most lookups
    /// in the side inputs are of absent keys (in the 1M benchmark, 9 accounts in 10 have no legacy name and no stored
    /// token), and in slots of 1 to 2 MB each one was a cache miss (perf: most of `AccountProcessor.process`'s own time).
    /// The filter's own reads still miss at times: in three alternating perf runs of a 1M plan, `process` with the
    /// lookups took 5.7-6.0 % of the samples before the filter and 4.1-5.0 % with it.
    @usableFromInline var filter: [UInt64] = []

    @inlinable init() {}

    @inlinable @inline(__always)
    static func tag(_ hash: UInt64) -> UInt64 { hash & 0xFFFF_FFFF_0000_0000 }

    /// False when no row has `hash` (true may still be wrong: then `find` decides).
    @inlinable @inline(__always)
    func mayContain(_ hash: UInt64) -> Bool {
        guard !filter.isEmpty else { return false }
        let bit = Self.filterBit(hash, words: filter.count)
        return filter[bit >> 6] & (1 << UInt64(bit & 63)) != 0
    }

    @inlinable @inline(__always)
    static func filterBit(_ hash: UInt64, words: Int) -> Int {
        // The slot is chosen by the low bits; these come from the high half.
        Int(truncatingIfNeeded: hash >> 32) & (words * 64 - 1)
    }

    @inlinable mutating func mark(_ hash: UInt64) {
        let bit = Self.filterBit(hash, words: filter.count)
        filter[bit >> 6] |= 1 << UInt64(bit & 63)
    }

    /// The slot of the row that `matches` accepts, and that row; or the empty slot where a new row would go.
    @inlinable @inline(__always)
    func find(_ hash: UInt64, matches: (Int) -> Bool) -> (slot: Int, row: Int?) {
        guard !slots.isEmpty else { return (0, nil) }
        let mask = slots.count - 1
        let tag = Self.tag(hash)
        var slot = Int(truncatingIfNeeded: hash) & mask
        while true {
            let entry = slots[slot]
            if entry == 0 { return (slot, nil) }
            if entry & 0xFFFF_FFFF_0000_0000 == tag {
                let row = Int(truncatingIfNeeded: entry & 0xFFFF_FFFF) - 1
                if matches(row) { return (slot, row) }
            }
            slot = (slot + 1) & mask
        }
    }

    /// Places the owner's last row, already appended with its hash, in the empty `slot` that `find` gave; when that
    /// would make the table over half full, it grows instead and places every row again.
    @inlinable mutating func add(_ hashes: ContiguousArray<UInt64>, at slot: Int) {
        guard hashes.count * 2 <= slots.count else { return rebuild(hashes) }
        slots[slot] = Self.tag(hashes[hashes.count - 1]) | UInt64(hashes.count)
        mark(hashes[hashes.count - 1])
    }

    /// Sizes the table to at least twice the rows (or twice `room`, when a reader knows it will add that many) and
    /// places every row again.
    @inlinable mutating func rebuild(_ hashes: ContiguousArray<UInt64>, room: Int = 0) {
        var size = 16
        while size < max(hashes.count, room) * 2 { size <<= 1 }
        slots = [UInt64](repeating: 0, count: size)
        filter = [UInt64](repeating: 0, count: max(1, size / 16))
        let mask = size - 1
        for row in hashes.indices {
            var slot = Int(truncatingIfNeeded: hashes[row]) & mask
            while slots[slot] != 0 { slot = (slot + 1) & mask }
            slots[slot] = Self.tag(hashes[row]) | UInt64(row + 1)
            mark(hashes[row])
        }
    }
}

/// The ids seen so far, by their `IdHash` (a plan's duplicate check): open-addressing tables of the hashes
/// themselves, 8 bytes a slot, each at most three quarters full (0 marks an empty slot; the hash 0 is kept aside). It is
/// the one part of a plan's memory that grows with the number of accounts: 11 to 21 bytes an account.
///
/// The hashes are spread over 256 tables by their top byte, and each table doubles on its own: while one grows, its old
/// and new slots are alive together, a 256th of the whole. One table doubling at once held both its old and its new
/// slots, half again the memory, at the moment it grew (a 10M-account plan peaked at 254 MB, 60 MB of it that). The
/// hashes in order with a table of 4-byte positions at most half full took 16 to 32 bytes an account (321 MB), and two
/// dependent reads a probe. A `Set<UInt64>` hashed each hash again, and grew by rehashing everything.
final class IdHashSet {
    private static let tableBits = 8
    /// Each table's slots, a power of two long.
    private var tables: [UnsafeMutableBufferPointer<UInt64>]
    private var filled: [Int]
    private var hasZero = false
    private(set) var count = 0

    /// Tables sized for `capacity` hashes from the start (a resumed plan knows how many its store holds).
    init(capacity: Int = 0) {
        var size = 64
        while capacity * 4 > (size << Self.tableBits) * 3 { size *= 2 }
        tables = (0..<(1 << Self.tableBits)).map { _ in Self.emptyTable(size) }
        filled = [Int](repeating: 0, count: 1 << Self.tableBits)
    }

    deinit {
        for table in tables { table.deallocate() }
    }

    private static func emptyTable(_ size: Int) -> UnsafeMutableBufferPointer<UInt64> {
        let table = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: size)
        table.initialize(repeating: 0)
        return table
    }

    @inline(__always)
    private static func table(of hash: UInt64) -> Int {
        Int(truncatingIfNeeded: hash >> UInt64(64 - tableBits))
    }

    /// Whatever the last `warm` read: an atomic store, which the optimizer keeps, and with it the loads.
    private static let warmed = Atomic<UInt64>(0)

    /// Reads what inserting these hashes will read first (each one's first slot), one after the other, and does
    /// nothing else with it: in a loop of independent loads the cache misses overlap, where inserting the hashes one by
    /// one waited for each miss in turn. perf put most of the merge's own time on that wait, on the one thread that
    /// runs it (the tables of a 1M-account plan are 16 MB).
    func warm(_ upcoming: some Sequence<UInt64>) {
        var any: UInt64 = 0
        for hash in upcoming {
            let table = tables[Self.table(of: hash)]
            any |= table[Int(truncatingIfNeeded: hash) & (table.count - 1)]
        }
        Self.warmed.store(any, ordering: .relaxed)
    }

    /// The slot of `table` that holds `hash` (not 0), or the empty one where it would go.
    @inline(__always)
    private static func probe(_ table: UnsafeMutableBufferPointer<UInt64>, _ hash: UInt64) -> (slot: Int, found: Bool) {
        let mask = table.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while table[slot] != 0 {
            if table[slot] == hash { return (slot, true) }
            slot = (slot + 1) & mask
        }
        return (slot, false)
    }

    func contains(_ hash: UInt64) -> Bool {
        hash == 0 ? hasZero : Self.probe(tables[Self.table(of: hash)], hash).found
    }

    /// Every hash in the set, in no particular order.
    func forEach(_ body: (UInt64) throws -> Void) rethrows {
        if hasZero { try body(0) }
        for table in tables {
            for hash in table where hash != 0 { try body(hash) }
        }
    }

    /// True when the hash was not there yet.
    func insert(_ hash: UInt64) -> Bool {
        if hash == 0 {
            if hasZero { return false }
            hasZero = true
            count += 1
            return true
        }
        let index = Self.table(of: hash)
        let table = tables[index]
        let (slot, found) = Self.probe(table, hash)
        if found { return false }
        table[slot] = hash
        count += 1
        filled[index] += 1
        if filled[index] * 4 > table.count * 3 { grow(index) }
        return true
    }

    private func grow(_ index: Int) {
        let old = tables[index]
        let table = Self.emptyTable(old.count * 2)
        for hash in old where hash != 0 { table[Self.probe(table, hash).slot] = hash }
        old.deallocate()
        tables[index] = table
    }
}
