-- AlterTable
ALTER TABLE "Session" ADD COLUMN     "activeMs" INTEGER;
