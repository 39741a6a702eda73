/// A name captured by the app's own backend at first sign-in (the legacy names table).
public struct LegacyName: Sendable, Equatable {
    public var givenName: String
    public var familyName: String
    /// The user agreed to have this name linked to their (possibly anonymised) Apple account.
    public var consent: Bool

    public init(givenName: String, familyName: String, consent: Bool) {
        self.givenName = givenName
        self.familyName = familyName
        self.consent = consent
    }
}

/// Why an account's owner asked for deletion, and when.
public struct DeletionRequest: Sendable, Equatable {
    public var requestedAt: Int64
    public var source: String

    public init(requestedAt: Int64, source: String) {
        self.requestedAt = requestedAt
        self.source = source
    }
}

/// A secret value. Its description never shows the value; only a fingerprint leaves the process.
public struct Secret: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    public let value: String
    /// A short, non-reversible fingerprint (first 12 hex digits of SHA-256), computed by the reader.
    public let fingerprint: String

    public init(value: String, fingerprint: String) {
        self.value = value
        self.fingerprint = fingerprint
    }

    public var description: String { "<secret sha256:\(fingerprint)>" }
    public var debugDescription: String { description }
}

/// The kinds of Apple credential an app may have kept.
public enum AppleTokenKind: String, Sendable, Codable, CaseIterable {
    case refreshToken = "refresh_token"
    case accessToken = "access_token"
    case authorizationCode = "authorization_code"
}

/// Facebook Login comes in two forms; only classic logins can be revoked from a server.
public enum FacebookLoginKind: String, Sendable, Codable, CaseIterable {
    case classic
    case limited
}

/// The Apple credential stored for one account.
public struct StoredAppleToken: Sendable, Equatable {
    public var kind: AppleTokenKind
    public var token: Secret
    public var capturedAt: Int64

    public init(kind: AppleTokenKind, token: Secret, capturedAt: Int64) {
        self.kind = kind
        self.token = token
        self.capturedAt = capturedAt
    }
}

/// The Facebook login details stored for one account.
public struct StoredFacebookLogin: Sendable, Equatable {
    public var facebookId: String
    public var login: FacebookLoginKind
    public var accessToken: Secret?

    public init(facebookId: String, login: FacebookLoginKind, accessToken: Secret?) {
        self.facebookId = facebookId
        self.login = login
        self.accessToken = accessToken
    }
}

/// Everything the app stored about one account's provider credentials.
public struct StoredCredentials: Sendable, Equatable {
    public var apple: StoredAppleToken?
    public var facebook: StoredFacebookLogin?

    public init(apple: StoredAppleToken? = nil, facebook: StoredFacebookLogin? = nil) {
        self.apple = apple
        self.facebook = facebook
    }
}

/// The side inputs of a run, looked up by account id.
public struct SideInputs: Sendable {
    public var legacyNames: KeyedRows<LegacyName>
    public var deletionRequests: KeyedRows<DeletionRequest>
    public var credentials: KeyedRows<StoredCredentials>
    public var protectedIds: Set<String>
    /// Deletion requests of an account an earlier row of the list asked for (the earliest counts).
    public var repeatedDeletionRequests = 0

    public init(
        legacyNames: KeyedRows<LegacyName> = [:], deletionRequests: KeyedRows<DeletionRequest> = [:],
        credentials: KeyedRows<StoredCredentials> = [:], protectedIds: Set<String> = []
    ) {
        self.legacyNames = legacyNames
        self.deletionRequests = deletionRequests
        self.credentials = credentials
        self.protectedIds = protectedIds
    }
}

/// Rows looked up by account id, stored densely: the ids and rows in arrays, and an open-addressing table of row
/// numbers found by the id's 64-bit hash (`IdHash`, kept per row). A plan looks up every account in each side input,
/// and most lookups miss; a `Dictionary` compares the id string with every key along the probe (SipHash, then
/// `memcmp`): 4-9 % of the plan's CPU in profiles. Here a probe compares half the hash, kept in the slot, first.
/// Memory is about that of a dictionary of id to row number (for the 254k rows of the 1M-account benchmark, a few MB).
/// Inlinable, so that the side-input readers in other modules get it specialized: used generically, each row added
/// looked up type metadata at run time (a third of the side inputs' load time).
public struct KeyedRows<Value: Sendable>: Sendable, ExpressibleByDictionaryLiteral {
    @usableFromInline var keys: ContiguousArray<String> = []
    @usableFromInline var hashes: ContiguousArray<UInt64> = []
    @usableFromInline var rows: ContiguousArray<Value> = []
    @usableFromInline var slots = HashSlots()

    @inlinable public init() {}

    @inlinable public init(_ dictionary: [String: Value]) {
        for (key, value) in dictionary { self[key] = value }
    }

    @inlinable public init(dictionaryLiteral elements: (String, Value)...) {
        for (key, value) in elements { self[key] = value }
    }

    @inlinable public var count: Int { rows.count }

    /// Every row, in the order added.
    @inlinable public var allRows: ContiguousArray<Value> { rows }

    /// Makes room for `count` rows, so that a reader that knows about how many rows it will add allocates each array
    /// and the table once.
    @inlinable public mutating func reserveCapacity(_ count: Int) {
        keys.reserveCapacity(count)
        hashes.reserveCapacity(count)
        rows.reserveCapacity(count)
        if slots.slots.count < count * 2 { slots.rebuild(hashes, room: count) }
    }

    /// The row of `key`, whose `IdHash` the caller has already computed (for several lookups of one account).
    @inlinable public subscript(key: String, hash hash: UInt64) -> Value? {
        guard slots.mayContain(hash) else { return nil }
        let (_, row) = find(key, hash)
        return row.map { rows[$0] }
    }

    /// The row number of an id given as its UTF-8 bytes, whose `IdHash` the caller computed (the plan's fast path
    /// reads ids where the decoder found them). The bytes are compared as they are; the hash is of the bytes too,
    /// so the lookup by string finds no other row.
    @inlinable func row(bytes key: UnsafeBufferPointer<UInt8>, hash: UInt64) -> Int? {
        guard slots.mayContain(hash) else { return nil }
        return slots.find(hash) { TextScan.sameBytes(key, keys[$0]) }.row
    }

    /// Whether the id given as bytes has a row (see `row(bytes:hash:)`).
    @inlinable public func contains(bytes key: UnsafeBufferPointer<UInt8>, hash: UInt64) -> Bool {
        row(bytes: key, hash: hash) != nil
    }

    @inlinable public subscript(bytes key: UnsafeBufferPointer<UInt8>, hash hash: UInt64) -> Value? {
        row(bytes: key, hash: hash).map { rows[$0] }
    }

    @inlinable public subscript(key: String) -> Value? {
        get { self[key, hash: IdHash.of(key)] }
        set {
            let hash = IdHash.of(key)
            let (slot, found) = find(key, hash)
            place(newValue, key: key, hash: hash, slot: slot, found: found)
        }
    }

    /// Looks `key` up once: `body` gets its row (nil when there is none) to read and change; what it leaves is stored.
    /// For a reader that checks a row before adding or replacing it (a get and a set looked the key up twice).
    @inlinable public mutating func modify<Answer>(_ key: String, _ body: (inout Value?) throws -> Answer) rethrows -> Answer {
        let hash = IdHash.of(key)
        let (slot, found) = find(key, hash)
        var value = found.map { rows[$0] }
        let result = try body(&value)
        place(value, key: key, hash: hash, slot: slot, found: found)
        return result
    }

    /// Stores `value` as the row of `key`, which `find` placed at `slot` (its row `found`, if any).
    @inlinable mutating func place(_ value: Value?, key: String, hash: UInt64, slot: Int, found: Int?) {
        switch (found, value) {
        case (let row?, let value?):
            rows[row] = value
        case (nil, let value?):
            keys.append(key)
            hashes.append(hash)
            rows.append(value)
            slots.add(hashes, at: slot)
        case (let row?, nil):
            // Rare (no reader removes rows): the last row takes the removed one's place, and the table is rebuilt.
            let last = rows.count - 1
            keys.swapAt(row, last)
            hashes.swapAt(row, last)
            rows.swapAt(row, last)
            keys.removeLast()
            hashes.removeLast()
            rows.removeLast()
            slots.rebuild(hashes)
        case (nil, nil):
            return
        }
    }

    /// The slot where `key` is or would go, and its row if it is there.
    @inlinable @inline(__always)
    func find(_ key: String, _ hash: UInt64) -> (slot: Int, row: Int?) {
        // The slot already matched half the hash: the id decides (reading the row's full hash too cost a cache miss).
        slots.find(hash) { keys[$0] == key }
    }
}
