/// The zone a table's times without one were written in (`source.timestamp_zone`): UTC or a fixed offset. A zone
/// with summer time has two offsets, and an hour of its autumn twice: it is not taken (its times are exported with
/// their offset instead).
public struct TimestampZone: Sendable, Equatable {
    /// East of UTC: +120 for +02:00.
    public let minutes: Int

    /// `UTC` (or `GMT`, `Z`, in any case), or an offset from `-12:00` to `+14:00` (those zones have), written as a time's
    /// offset is read: `+02:00`, `+0200`, `+02`, `-05:30`; nil for anything else (a zone's name, `+1:00`).
    public init?(_ text: String) {
        if ["UTC", "GMT", "Z"].contains(text.uppercased()) {
            minutes = 0
            return
        }
        // Read as the offset of midnight, 1 January 2000 (946,684,800,000 ms at UTC): one reader of offsets for both.
        let reading = ("2000-01-01T00:00:00" + text).withUTF8Bytes { Timestamp.readRFC3339($0) }
        guard text.utf8.first == 43 || text.utf8.first == 45, case .time(let millis) = reading else { return nil }
        let minutes = Int(946_684_800_000 - millis) / 60_000
        guard (-12 * 60...14 * 60).contains(minutes) else { return nil }
        self.minutes = minutes
    }

    /// As an RFC 3339 offset reads it.
    var offset: (sign: Int, hours: Int, minutes: Int) {
        (minutes < 0 ? -1 : 1, abs(minutes) / 60, abs(minutes) % 60)
    }

    /// `UTC`, or `UTC+02:00`.
    public var description: String {
        guard minutes != 0 else { return "UTC" }
        return "UTC\(minutes < 0 ? "-" : "+")\(Timestamp.twoDigits(abs(minutes) / 60)):\(Timestamp.twoDigits(abs(minutes) % 60))"
    }
}

/// Timestamps as epoch milliseconds, with an RFC 3339 reader and writer that need no Foundation.
public enum Timestamp {
    /// `2026-10-03T12:00:00Z`, `2026-10-03T12:00:00.250+02:00`, or a date alone (`2026-10-03`, midnight UTC); a space for
    /// the T, and an offset of hours alone (`+02`, as PostgreSQL writes it) or without its colon (`+0200`), are taken too.
    public static func parseRFC3339(_ text: String) -> Int64? {
        text.withUTF8Bytes(parseRFC3339)
    }

    /// The same, on the text's UTF-8 bytes (read in place: a copy of each timestamp cost an allocation).
    public static func parseRFC3339(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        if case .time(let millis) = readRFC3339(bytes) { return millis }
        return nil
    }

    /// The same, except that a date and time written without Z or an offset (a SQL `DATETIME`, `2026-10-03 12:00:00`),
    /// and a date alone, are read in `zone` (`source.timestamp_zone`) rather than refused (or, a date alone, taken
    /// for UTC). A time with its own Z or offset keeps it.
    public static func parseRFC3339(_ text: String, zone: TimestampZone?) -> Int64? {
        text.withUTF8Bytes { bytes in
            if case .time(let millis) = readRFC3339(bytes, zone: zone) { return millis }
            return nil
        }
    }

    /// Why `text` is no RFC 3339 time, in words that show none of it (nil when it is one): a reviewer of a masked
    /// report sees `'####-##-##T##:##:##Z'` and needs to know which part is wrong.
    public static func rfc3339Flaw(_ text: String) -> String? {
        rfc3339Flaw(text, zone: nil)
    }

    /// The same, for a time read in `zone` when it has none of its own (`parseRFC3339(_:zone:)`).
    public static func rfc3339Flaw(_ text: String, zone: TimestampZone?) -> String? {
        text.withUTF8Bytes { bytes in
            if case .flaw(let flaw) = readRFC3339(bytes, zone: zone) { return flaw.rawValue }
            return nil
        }
    }

    /// What is wrong with a text that is no RFC 3339 time.
    public enum Flaw: String {
        case shape = "not written as 2026-11-21T00:00:00Z, with an optional fraction and Z or an offset, or as a date alone"
        case month = "its month is not 01 to 12"
        case day = "its day is not one of its month's"
        case hour = "its hour is over 23"
        case minute = "its minute is over 59"
        case second = "its second is over 60"
        case offset = "its offset from UTC is out of range"
        case noOffset = "it has no Z or offset from UTC after its time"
    }

    enum Reading {
        case time(Int64)
        case flaw(Flaw)
    }

    static func readRFC3339(_ bytes: UnsafeBufferPointer<UInt8>, zone: TimestampZone? = nil) -> Reading {
        func number(_ start: Int, _ count: Int) -> Int? {
            guard start + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[start..<start + count] {
                guard byte >= 48 && byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            return value
        }
        guard let year = number(0, 4), bytes.count >= 10, bytes[4] == 45, let month = number(5, 2), bytes[7] == 45,
              let day = number(8, 2) else { return .flaw(.shape) }
        // The shape first, read whole: a text cut after a wrong month is no time by its shape as well.
        var clock: (hour: Int, minute: Int, second: Int, millis: Int, offset: (sign: Int, hours: Int, minutes: Int)?)?
        if bytes.count > 10 {
            guard bytes.count >= 19, bytes[10] == 84 || bytes[10] == 116 || bytes[10] == 32, let hour = number(11, 2), bytes[13] == 58,
                  let minute = number(14, 2), bytes[16] == 58, let second = number(17, 2) else { return .flaw(.shape) }
            var index = 19, millis = 0
            if index < bytes.count, bytes[index] == 46 {  // fraction: its first three digits
                index += 1
                let digits = index
                var scale = 100
                while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                    millis += Int(bytes[index] - 48) * scale
                    scale /= 10
                    index += 1
                }
                guard index > digits else { return .flaw(.shape) }
            }
            var offset: (sign: Int, hours: Int, minutes: Int)?
            if index == bytes.count {  // no zone of its own
                guard let zone else { return .flaw(.noOffset) }
                offset = zone.offset
            } else if bytes[index] == 90 || bytes[index] == 122 {  // Z
                guard index + 1 == bytes.count else { return .flaw(.shape) }
            } else {
                // +02:00, and as PostgreSQL writes a timestamptz, +02 (and ISO 8601's +0200).
                let length = bytes.count - index
                guard bytes[index] == 43 || bytes[index] == 45, length == 3 || length == 5 || length == 6, let hours = number(index + 1, 2),
                      length == 3 || length == 6 && bytes[index + 3] == 58 || length == 5 else { return .flaw(.shape) }
                guard let minutes = length == 3 ? 0 : number(index + (length == 6 ? 4 : 3), 2) else { return .flaw(.shape) }
                offset = (bytes[index] == 43 ? 1 : -1, hours, minutes)
            }
            clock = (hour, minute, second, millis, offset)
        }
        guard (1...12).contains(month) else { return .flaw(.month) }
        guard (1...daysIn(month: month, year: year)).contains(day) else { return .flaw(.day) }
        var millis = daysFromCivil(year: year, month: month, day: day) * 86_400_000
        guard let clock else { return .time(Int64(millis - (zone?.minutes ?? 0) * 60_000)) }
        guard clock.hour < 24 else { return .flaw(.hour) }
        guard clock.minute < 60 else { return .flaw(.minute) }
        guard clock.second < 61 else { return .flaw(.second) }
        millis += ((clock.hour * 60 + clock.minute) * 60 + clock.second) * 1000 + clock.millis
        guard let offset = clock.offset else { return .time(Int64(millis)) }
        guard offset.hours < 24, offset.minutes < 60 else { return .flaw(.offset) }
        // 12:00+02:00 is 10:00Z.
        return .time(Int64(millis - offset.sign * (offset.hours * 60 + offset.minutes) * 60_000))
    }

    /// 28 to 31: a 30 February is refused rather than taken for 2 March.
    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// `2026-10-03T12:00:00Z` (milliseconds are dropped).
    public static func formatRFC3339(_ millis: Int64) -> String {
        let seconds = Int(millis.floorDiv(1000))
        let days = seconds.floorDiv(86_400)
        let rest = seconds - days * 86_400
        let (year, month, day) = civilFromDays(days)
        guard (1000...9999).contains(year) else {
            // RFC 3339 writes four digits: year 0 is 0000, as it was read.
            let shown = (0..<1000).contains(year) ? String(repeating: "0", count: 4 - String(year).count) + String(year) : String(year)
            return "\(shown)-\(twoDigits(month))-\(twoDigits(day))T\(twoDigits(rest / 3600)):\(twoDigits(rest / 60 % 60)):\(twoDigits(rest % 60))Z"
        }
        // Digit by digit into the string's own storage: interpolating six numbers cost about 5,000 instructions.
        return String(unsafeUninitializedCapacity: 20) { text in
            func put(_ value: Int, at start: Int, digits: Int) {
                var value = value
                for index in (start..<start + digits).reversed() {
                    text[index] = UInt8(48 + value % 10)
                    value /= 10
                }
            }
            put(year, at: 0, digits: 4)
            put(month, at: 5, digits: 2)
            put(day, at: 8, digits: 2)
            put(rest / 3600, at: 11, digits: 2)
            put(rest / 60 % 60, at: 14, digits: 2)
            put(rest % 60, at: 17, digits: 2)
            for (index, byte) in [(4, 45), (7, 45), (10, 84), (13, 58), (16, 58), (19, 90)] { text[index] = UInt8(byte) }
            return 20
        }
    }

    /// `7` as `07`.
    static func twoDigits(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }

    // Howard Hinnant's days-from-civil algorithms.
    public static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = y.floorDiv(400)
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civilFromDays(_ days: Int) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = z.floorDiv(146_097)
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

extension BinaryInteger {
    func floorDiv(_ divisor: Self) -> Self {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
